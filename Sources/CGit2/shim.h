// libgit2, for its three-way file merge (git_merge_file); nothing else of git is used.
#include <git2.h>

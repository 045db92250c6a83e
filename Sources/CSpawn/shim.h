#ifndef NOTES_CSPAWN_SHIM_H
#define NOTES_CSPAWN_SHIM_H
/* pipe2(2), posix_spawn_file_actions_addchdir_np(3) and _addclosefrom_np(3) are GNU extensions that Swift's
   Glibc module leaves out (declaring them here, rather than defining _GNU_SOURCE,
   keeps every other declaration the same as Glibc's): a child started with
   posix_spawn, its pipes made close-on-exec at once, in the folder it is to run in. */
#include <spawn.h>
int pipe2(int fds[2], int flags);
int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *actions, const char *path);
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);
#endif

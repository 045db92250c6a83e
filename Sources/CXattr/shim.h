#ifndef NOTES_CXATTR_SHIM_H
#define NOTES_CXATTR_SHIM_H
/* Extended attributes (getxattr(2)), which Swift's Glibc module leaves out; the
   CLI reads the mount's user.notes.* attributes with them. */
#include <sys/xattr.h>
#endif

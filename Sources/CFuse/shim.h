#ifndef NOTES_CFUSE_SHIM_H
#define NOTES_CFUSE_SHIM_H

/* libfuse3's low-level API at the 3.5 level (Debian 12 ships 3.14). */
#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>
#include <errno.h>
#include <sys/stat.h>

/* Function-like macros and versioned symbols do not import into Swift; these inline
   wrappers give them a callable name. */

/** Runs the session's multi-threaded loop until it is exited or unmounted.
    At FUSE_USE_VERSION 35 the loop takes the version-1 config struct (clone_fd,
    max_idle_threads); handing it a `fuse_loop_cfg_create()` object instead is read as
    clone_fd on and a tiny idle limit, so libfuse opens /dev/fuse and starts a thread
    for every request. */
static inline int notes_fuse_session_loop_mt(struct fuse_session *se, unsigned int max_idle_threads) {
    struct fuse_loop_config config;
    config.clone_fd = 0;
    config.max_idle_threads = max_idle_threads;
    return fuse_session_loop_mt(se, &config);
}

/* Flags of rename(2) that libfuse passes through but glibc's headers hide here. */
static const unsigned int NOTES_RENAME_NOREPLACE = 1;
static const unsigned int NOTES_RENAME_EXCHANGE = 2;

/* FUSE_SET_ATTR_* bits are macros too. */
static const int NOTES_SET_ATTR_MODE = FUSE_SET_ATTR_MODE;
static const int NOTES_SET_ATTR_UID = FUSE_SET_ATTR_UID;
static const int NOTES_SET_ATTR_GID = FUSE_SET_ATTR_GID;
static const int NOTES_SET_ATTR_SIZE = FUSE_SET_ATTR_SIZE;
static const int NOTES_SET_ATTR_ATIME = FUSE_SET_ATTR_ATIME;
static const int NOTES_SET_ATTR_MTIME = FUSE_SET_ATTR_MTIME;
static const int NOTES_SET_ATTR_ATIME_NOW = FUSE_SET_ATTR_ATIME_NOW;
static const int NOTES_SET_ATTR_MTIME_NOW = FUSE_SET_ATTR_MTIME_NOW;
static const int NOTES_SET_ATTR_CTIME = FUSE_SET_ATTR_CTIME;

/* Capabilities asked for in init. */
static const unsigned int NOTES_CAP_READDIRPLUS = FUSE_CAP_READDIRPLUS;
static const unsigned int NOTES_CAP_READDIRPLUS_AUTO = FUSE_CAP_READDIRPLUS_AUTO;
static const unsigned int NOTES_CAP_EXPLICIT_INVAL_DATA = FUSE_CAP_EXPLICIT_INVAL_DATA;
static const unsigned int NOTES_CAP_AUTO_INVAL_DATA = FUSE_CAP_AUTO_INVAL_DATA;
static const unsigned int NOTES_CAP_ATOMIC_O_TRUNC = FUSE_CAP_ATOMIC_O_TRUNC;
static const unsigned int NOTES_CAP_EXPORT_SUPPORT = FUSE_CAP_EXPORT_SUPPORT;

#endif

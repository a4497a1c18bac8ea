/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Closing the descriptors users pass corrald (Run's stdin, stdout and stderr, and what
 * comes with any other request), off the event loop. close() calls the file's flush:
 * for a file on FUSE, or on an overlayfs over FUSE, that is a FLUSH request to the file
 * system's server, which may be the user herself, and which the kernel waits for
 * uninterruptibly however long it takes; the last close of a socket with SO_LINGER set
 * waits for its peer (so linger is turned off first). So these descriptors, and the
 * connections that brought them (closing one drops what it still carried), are closed
 * on a thread of their own. When one close has waited FD_CLOSER_STUCK_USEC, the FUSE
 * connections of the user who passed it that have requests waiting are aborted (through
 * fusectl, /sys/fs/fuse/connections, as that user, who owns their files): her server's
 * silence costs her her file system, never the other users their scheduler, nor root a
 * daemon that cannot be stopped. A close the abort does not end (another user's FUSE, a
 * hard NFS mount) keeps its thread, and another thread takes the queue over. */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "time-util.h"

#define FD_CLOSER_STUCK_USEC (5 * USEC_PER_SEC)

typedef struct FdCloser FdCloser;

/* fusectl_fd: the directory of FUSE's control file system's connections (a tmpdir in
 * tests), taken; -EBADF: /sys/fs/fuse/connections, opened each time it is needed. */
int fd_closer_new(sd_event *event, int fusectl_fd, FdCloser **ret);
/* Aborts the passer's FUSE connections if a close is stuck, then waits for the thread. */
FdCloser *fd_closer_free(FdCloser *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(FdCloser *, fd_closer_free);

/* Closes fd, a descriptor uid passed, soon; without a closer (c NULL: tests, a closer
 * that could not start) here and now. Never fails: on no memory the descriptor is closed
 * here. */
void fd_closer_close(FdCloser *c, int fd, uid_t uid);
/* Descriptors waiting to be closed, the one being closed included. */
unsigned fd_closer_pending(FdCloser *c);

/* The FUSE connections under fusectl_fd owned by uid with requests waiting, aborted: how
 * many were. Writes each one's abort file with uid as the file system uid. */
int fuse_abort_user_connections(int fusectl_fd, uid_t uid);

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "cgroup-freezer.h"
#include "cgroup-stat.h"
#include "cgroup-util.h"
#include "errno-util.h"
#include "fd-util.h"

static int has_freezer(int cg_fd) {
        if (faccessat(cg_fd, "cgroup.freeze", F_OK, 0) >= 0)
                return 0;
        return errno == ENOENT ? -EOPNOTSUPP : negative_errno();
}

int cg_freeze(int root_fd, const char *path, bool freeze) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        fd = cg_open(root_fd, path);
        if (fd < 0)
                return fd;
        r = write_string_file_at(fd, "cgroup.freeze", freeze ? "1" : "0");
        return r == -ENOENT ? -EOPNOTSUPP : r;
}

static int read_events(int cg_fd, CgroupEvents *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = cg_read_attr(cg_fd, "cgroup.events", &s);
        if (r < 0)
                return r;
        return cg_parse_events(s, ret);
}

int cg_is_frozen(int root_fd, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        CgroupEvents ev;
        int r;

        fd = cg_open(root_fd, path);
        if (fd < 0)
                return fd;
        r = has_freezer(fd);
        if (r < 0)
                return r;
        r = read_events(fd, &ev);
        if (r < 0)
                return r;
        return ev.frozen;
}

/* inotify has no *at() variant: name the file through the directory fd's /proc link,
 * which resolves to the same inode however root_fd was obtained. */
static int watch_events_file(int inotify_fd, int cg_fd) {
        char p[64];
        int wd;

        (void) snprintf(p, sizeof p, "/proc/self/fd/%d/cgroup.events", cg_fd);
        wd = inotify_add_watch(inotify_fd, p, IN_MODIFY);
        if (wd < 0)
                return negative_errno();
        return wd;
}

int cg_events_watch_add(int inotify_fd, int root_fd, const char *path) {
        _cleanup_close_ int fd = -EBADF;

        fd = cg_open(root_fd, path);
        if (fd < 0)
                return fd;
        return watch_events_file(inotify_fd, fd);
}

int cg_events_watch_fd(int root_fd, const char *path) {
        _cleanup_close_ int ifd = -EBADF;
        int r;

        ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (ifd < 0)
                return negative_errno();
        r = cg_events_watch_add(ifd, root_fd, path);
        if (r < 0)
                return r;
        return TAKE_FD(ifd);
}


/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Why not libcgroup (2.0.2, the version Debian ships): every call goes through a global
 * mount table that cgroup_init() fills from /proc/mounts, so nothing can be read relative
 * to a root fd (and a fake tree in a tmpdir cannot be used in tests); errors come back as
 * positive ECG* codes plus a global "last errno"; and it has no cgroup.kill, cgroup.freeze
 * or io.stat support. The files we need are a handful of one-line reads, so we keep this
 * thin *at() layer instead. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "cgroup-util.h"
#include "errno-util.h"
#include "fd-util.h"

/* Bigger than any attribute we read: io.stat grows with the number of block devices. */
#define CG_ATTR_MAX (1024 * 1024)

static bool path_has_dotdot(const char *p) {
        for (;;) {
                size_t n = strcspn(p, "/");

                if (n == 2 && p[0] == '.' && p[1] == '.')
                        return true;
                if (!p[n])
                        return false;
                p += n + 1;
        }
}

int cg_open(int root_fd, const char *path) {
        const char *p = path ?: "";
        int fd;

        p += strspn(p, "/");
        if (path_has_dotdot(p))
                return -EINVAL;
        if (!*p)
                p = ".";

        fd = openat(root_fd, p, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        return fd;
}

int cg_read_attr(int cg_fd, const char *attr, char **ret) {
        return read_file_at(cg_fd, attr, CG_ATTR_MAX, ret, NULL);
}

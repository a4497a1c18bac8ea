/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Not libcgroup (2.0.2 in Debian): every call resolves paths through a global mount table
 * that cgroup_init() builds from /proc/mounts, so nothing can be read below a root fd (nor
 * from a fake tree in tests); even cgroup_get_current_controller_path() hard-codes /proc.
 * Errors are positive ECG* codes; it has no freeze/kill calls and its stats reader knows only
 * flat "key value" files, not io.stat. We need a few small reads: hence this thin *at() layer. */
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

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-pid.h"
#include "errno-util.h"
#include "fd-util.h"

int cg_path_of_pid_at(int proc_fd, pid_t pid, char **ret) {
        _cleanup_free_ char *buf = NULL;
        char fn[32], *p;
        int r;

        assert(ret);
        if (pid < 0)
                return -EINVAL;

        if (pid == 0)
                strcpy(fn, "self/cgroup");
        else
                (void) snprintf(fn, sizeof fn, "%d/cgroup", (int) pid);

        r = read_file_at(proc_fd, fn, 64 * 1024, &buf, NULL);
        if (r == -ENOENT)
                return -ESRCH;
        if (r < 0)
                return r;

        for (p = buf; *p; ) {
                char *e = strchrnul(p, '\n');

                if (strneq(p, "0::", 3)) {
                        char *path = strndup(p + 3, (size_t) (e - p - 3));

                        if (!path)
                                return -ENOMEM;
                        if (path[0] != '/') {
                                free(path);
                                return -EBADMSG;
                        }
                        *ret = path;
                        return 0;
                }
                p = *e ? e + 1 : e;
        }
        return -ENODATA;
}

int cg_path_of_pid(pid_t pid, char **ret) {
        _cleanup_close_ int fd = -EBADF;

        fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        return cg_path_of_pid_at(fd, pid, ret);
}

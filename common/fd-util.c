/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "errno-util.h"
#include "fd-util.h"

int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

int read_file_at(int dirfd, const char *path, size_t max, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t allocated = 0, n = 0;

        assert(path);
        assert(ret);

        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        for (;;) {
                ssize_t k;

                if (!GREEDY_REALLOC(buf, allocated, n + 4096 + 1))
                        return -ENOMEM;
                k = read(fd, buf + n, allocated - n - 1);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n > max)
                        return -EFBIG;
        }
        if (!buf && !GREEDY_REALLOC(buf, allocated, 1))
                return -ENOMEM;
        buf[n] = 0;
        if (ret_size)
                *ret_size = n;
        *ret = TAKE_PTR(buf);
        return 0;
}

int write_string_file_at(int dirfd, const char *path, const char *s) {
        _cleanup_close_ int fd = -EBADF;
        size_t n = strlen(s);
        ssize_t k;

        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        k = write(fd, s, n);
        if (k < 0)
                return negative_errno();
        if ((size_t) k != n)
                return -EIO;
        return 0;
}

int loop_write(int fd, const void *buf, size_t n) {
        const char *p = buf;

        while (n > 0) {
                ssize_t k = write(fd, p, n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int opendir_at(int dirfd, const char *path, int flags, DIR **ret) {
        int fd, r;
        DIR *d;

        fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        *ret = d;
        return 0;
}

typedef union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
} OneFdControl;

int record_send(int sock, const void *buf, size_t n, int fd, int flags) {
        OneFdControl control = {};
        struct iovec iov = { .iov_base = (void *) buf, .iov_len = n };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
        ssize_t k;

        if (fd >= 0) {
                struct cmsghdr *c;
                mh.msg_control = &control;
                mh.msg_controllen = sizeof control;
                c = CMSG_FIRSTHDR(&mh);
                c->cmsg_level = SOL_SOCKET;
                c->cmsg_type = SCM_RIGHTS;
                c->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(c), &fd, sizeof(int));
        }
        k = sendmsg(sock, &mh, flags | MSG_NOSIGNAL);
        if (k < 0)
                return negative_errno();
        return (size_t) k == n ? 0 : -EIO;
}

int record_recv(int sock, void *buf, size_t n, int *ret_fd, int flags) {
        OneFdControl control = {};
        struct iovec iov = { .iov_base = buf, .iov_len = n };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                             .msg_controllen = sizeof control };
        int fd = -EBADF;
        ssize_t k;

        *ret_fd = -EBADF;
        k = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
        if (k < 0)
                return negative_errno();
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (k == 0 && fd < 0)
                return -ECONNRESET;
        if ((size_t) k != n || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
                safe_close(fd);
                return -EBADMSG;
        }
        *ret_fd = fd;
        return 0;
}

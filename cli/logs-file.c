/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "errno-util.h"
#include "fd-util.h"
#include "logs-file.h"
#include "macro.h"

/* Reopening an O_PATH descriptor through /proc/self/fd checks the caller's read permission
 * on the inode, as a plain open would, without the plain open's effects on what is not a
 * file: a FIFO's open waits for a writer, a device's may rewind a tape or raise a modem
 * line. O_NONBLOCK stays on the reopen all the same. */
static int open_regular(const char *path, bool nofollow) {
        _cleanup_close_ int pfd = -EBADF, fd = -EBADF;
        struct stat st, st2;
        char proc[64];

        pfd = open(path, O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
        if (pfd < 0)
                return negative_errno();
        if (fstat(pfd, &st) < 0)
                return negative_errno();
        if (S_ISLNK(st.st_mode)) /* O_PATH | O_NOFOLLOW opens the link itself */
                return -ELOOP;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
        fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st2) < 0)
                return negative_errno();
        if (!S_ISREG(st2.st_mode) || st2.st_dev != st.st_dev || st2.st_ino != st.st_ino)
                return -EBADFD;
        return TAKE_FD(fd);
}

static int send_result(int sock, int r, int fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

        if (fd >= 0) {
                mh.msg_control = control.buf;
                mh.msg_controllen = sizeof(control.buf);
                CMSG_FIRSTHDR(&mh)->cmsg_level = SOL_SOCKET;
                CMSG_FIRSTHDR(&mh)->cmsg_type = SCM_RIGHTS;
                CMSG_FIRSTHDR(&mh)->cmsg_len = CMSG_LEN(sizeof(int));
                memcpy(CMSG_DATA(CMSG_FIRSTHDR(&mh)), &fd, sizeof(int));
        }
        return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? negative_errno() : 0;
}

static int receive_result(int sock, int *ret_fd) {
        union {
                struct cmsghdr h;
                char buf[CMSG_SPACE(sizeof(int))];
        } control = {};
        int r = -EPROTO, fd = -EBADF;
        struct iovec iov = { .iov_base = &r, .iov_len = sizeof(r) };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                             .msg_controllen = sizeof(control.buf) };
        ssize_t n;

        do
                n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
                    c->cmsg_len == CMSG_LEN(sizeof(int)))
                        memcpy(&fd, CMSG_DATA(c), sizeof(int));
        if (n != sizeof(r) || (mh.msg_flags & MSG_CTRUNC) || (r == 0) != (fd >= 0) || r > 0) {
                safe_close(fd);
                return -EPROTO; /* the child died before it said (it sends nothing then) */
        }
        *ret_fd = fd;
        return r;
}

/* The owner's groups as the job had them (the executor's getgrouplist()), or only the
 * primary group for a uid NSS does not know. */
static int owner_groups(uid_t uid, gid_t gid, gid_t **ret, int *ret_n) {
        struct passwd *pw = getpwuid(uid);
        _cleanup_free_ gid_t *groups = NULL;
        int n = 32;

        if (!pw) {
                groups = malloc(sizeof(gid_t));
                if (!groups)
                        return -ENOMEM;
                groups[0] = gid;
                *ret = TAKE_PTR(groups);
                *ret_n = 1;
                return 0;
        }
        for (int tries = 0; tries < 8; tries++) {
                int k = n;
                gid_t *g = realloc(groups, sizeof(gid_t) * (size_t) n);

                if (!g)
                        return -ENOMEM;
                groups = g;
                if (getgrouplist(pw->pw_name, gid, groups, &k) >= 0) {
                        *ret = TAKE_PTR(groups);
                        *ret_n = k;
                        return 0;
                }
                n = k > n ? k : n * 2;
        }
        return -E2BIG;
}

_noreturn_ static void child_open(int sock, const char *path, uid_t uid, gid_t gid, const gid_t *groups, int n_groups) {
        _cleanup_close_ int fd = -EBADF;
        int r = 0;

        if (setgroups((size_t) n_groups, groups) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
                r = negative_errno();
        else if (geteuid() != uid || getegid() != gid)
                r = -EPERM;
        else {
                fd = open_regular(path, true);
                r = fd < 0 ? fd : 0;
        }
        _exit(send_result(sock, r, fd) < 0 ? 1 : 0);
}

static int open_as(const char *path, uid_t uid, gid_t gid, int *ret_fd) {
        _cleanup_free_ gid_t *groups = NULL;
        _cleanup_close_ int sock0 = -EBADF, sock1 = -EBADF;
        int pair[2], n_groups, status, r;
        pid_t pid;

        r = owner_groups(uid, gid, &groups, &n_groups);
        if (r < 0)
                return r;
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) < 0)
                return negative_errno();
        sock0 = pair[0];
        sock1 = pair[1];
        fflush(NULL); /* nothing buffered is written twice */
        pid = fork();
        if (pid < 0)
                return negative_errno();
        if (pid == 0) {
                sock0 = safe_close(sock0);
                child_open(sock1, path, uid, gid, groups, n_groups);
        }
        sock1 = safe_close(sock1);
        r = receive_result(sock0, ret_fd);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        break;
        return r;
}

int logs_open(const char *path, uid_t uid, gid_t gid, int *ret_fd) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        int r;

        if (getuid() == uid && geteuid() == uid)
                fd = open_regular(path, false);
        else if (geteuid() == 0) {
                r = open_as(path, uid, gid, &fd);
                if (r < 0)
                        return r;
        } else
                fd = open_regular(path, true);
        if (fd < 0)
                return fd;
        /* What came from the child is checked here too. */
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

LogsPump *logs_pump_new(int in_fd, int out_fd, bool escape, uint64_t limit) {
        LogsPump *p = malloc(sizeof(LogsPump));

        if (!p)
                return NULL;
        p->in_fd = in_fd;
        p->out_fd = out_fd;
        p->escape = escape;
        p->left = limit;
        p->n_pending = 0;
        return p;
}

static int pump_write(LogsPump *p, size_t n, bool more) {
        size_t used, len;

        if (!p->escape)
                return loop_write(p->out_fd, p->buf, n);
        len = text_escape_stream(p->buf, n, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, more, p->ebuf, &used);
        memmove(p->buf, p->buf + used, n - used);
        p->n_pending = n - used;
        return loop_write(p->out_fd, p->ebuf, len);
}

int logs_pump_step(LogsPump *p) {
        size_t want = sizeof(p->buf) - p->n_pending;
        ssize_t n;
        int r;

        if (p->left < want)
                want = (size_t) p->left;
        if (want > 0) {
                n = read(p->in_fd, p->buf + p->n_pending, want);
                if (n < 0)
                        return errno == EINTR || errno == EAGAIN ? 1 : negative_errno();
        } else
                n = 0;
        if (n > 0 && p->left != UINT64_MAX)
                p->left -= (uint64_t) n;
        if (n > 0 && p->left > 0) {
                r = pump_write(p, p->n_pending + (size_t) n, true);
                return r < 0 ? r : 1;
        }
        /* The end: what is left of a cut sequence is shown as the bytes it is. */
        r = pump_write(p, p->n_pending + (size_t) n, false);
        return r < 0 ? r : 0;
}

int logs_seek_tail(int fd, uint64_t max_bytes, uint64_t *ret_skipped) {
        struct stat st;
        uint64_t skip = 0;

        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (max_bytes > 0 && (uint64_t) st.st_size > max_bytes)
                skip = (uint64_t) st.st_size - max_bytes;
        if (lseek(fd, (off_t) skip, SEEK_SET) < 0)
                return negative_errno();
        if (ret_skipped)
                *ret_skipped = skip;
        return 0;
}

int logs_copy(int fd, int out_fd, uint64_t max_bytes, bool escape, uint64_t *ret_skipped) {
        _cleanup_free_ LogsPump *p = NULL;
        struct stat st;
        uint64_t skip;
        int r;

        r = logs_seek_tail(fd, max_bytes, &skip);
        if (r < 0)
                return r;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        p = logs_pump_new(fd, out_fd, escape, (uint64_t) st.st_size - skip);
        if (!p)
                return -ENOMEM;
        while ((r = logs_pump_step(p)) > 0)
                ;
        if (r < 0)
                return r;
        if (ret_skipped)
                *ret_skipped = skip;
        return 0;
}

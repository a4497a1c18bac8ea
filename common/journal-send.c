/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <linux/sockios.h>
#include <unistd.h>

#include "journal-send.h"

static const char *field_value(const JournalField *f) {
        return f->value ?: ""; /* an unset name, say: an empty field rather than a crash */
}

static size_t field_len(const JournalField *f) {
        return !f->value ? 0 : f->len == SIZE_MAX ? strlen(f->value) : f->len;
}

int journal_serialize(const JournalField *fields, size_t n, char **ret, size_t *ret_size) {
        size_t size = 0;
        char *buf, *p;

        for (size_t i = 0; i < n; i++)
                size += strlen(fields[i].name) + 1 + 8 + field_len(&fields[i]) + 1;
        buf = p = malloc(size ?: 1);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t k = strlen(fields[i].name), len = field_len(&fields[i]);

                memcpy(p, fields[i].name, k);
                p += k;
                if (memchr(field_value(&fields[i]), '\n', len)) {
                        uint64_t le = 0;
                        *p++ = '\n';
                        for (int b = 0; b < 8; b++)
                                ((uint8_t *) &le)[b] = (uint8_t) ((uint64_t) len >> (8 * b));
                        memcpy(p, &le, 8);
                        p += 8;
                } else
                        *p++ = '=';
                memcpy(p, field_value(&fields[i]), len);
                p += len;
                *p++ = '\n';
        }
        *ret = buf;
        *ret_size = (size_t) (p - buf);
        return 0;
}

/* Too large for one datagram: journald takes a sealed memfd instead (and only a sealed
 * one, so that we cannot change it under its feet). */
static int send_memfd(int sock, const struct sockaddr_un *sa, socklen_t salen, const char *buf, size_t size) {
        union {
                struct cmsghdr cmsghdr;
                uint8_t space[CMSG_SPACE(sizeof(int))];
        } control = {};
        struct msghdr mh = { .msg_name = (void *) sa, .msg_namelen = salen, .msg_control = &control,
                             .msg_controllen = sizeof control };
        struct cmsghdr *cmsg;
        int fd, r = 0;

        fd = memfd_create("journal-data", MFD_ALLOW_SEALING | MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t done = 0; done < size;) {
                ssize_t k = write(fd, buf + done, size - done);
                if (k < 0) {
                        r = -errno;
                        goto out;
                }
                done += (size_t) k;
        }
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
                r = -errno;
                goto out;
        }
        cmsg = CMSG_FIRSTHDR(&mh);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
        if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
                r = -errno;
out:
        close(fd);
        return r;
}

/* One socket for the process's life, as libsystemd keeps one: the supervisor relays every
 * line of a job's output through it. */
static int sock = -1;

int journal_send_to(const char *path, const JournalField *fields, size_t n) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        socklen_t salen;
        char *buf;
        size_t size;
        int r;

        if (strlen(path) >= sizeof sa.sun_path)
                return -EINVAL;
        strcpy(sa.sun_path, path);
        salen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + strlen(path) + 1);
        if (sock < 0) {
                sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
                if (sock < 0)
                        return -errno;
        }
        r = journal_serialize(fields, n, &buf, &size);
        if (r < 0)
                return r;
        if (sendto(sock, buf, size, MSG_NOSIGNAL, (struct sockaddr *) &sa, salen) >= 0)
                r = 0;
        else if (errno == EMSGSIZE || errno == ENOBUFS)
                r = send_memfd(sock, &sa, salen, buf, size);
        else
                r = -errno;
        free(buf);
        return r;
}

int journal_wait_consumed(uint64_t timeout_usec) {
        for (uint64_t waited = 0;; waited += 1000) {
                int queued = 0;

                if (sock < 0)
                        return 0;
                /* A unix datagram stays charged to its sender until the receiver reads it. */
                if (ioctl(sock, SIOCOUTQ, &queued) < 0)
                        return -errno;
                if (queued <= 0)
                        return 0;
                if (waited >= timeout_usec)
                        return -ETIMEDOUT;
                (void) usleep(1000);
        }
}

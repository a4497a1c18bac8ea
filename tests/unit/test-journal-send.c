/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "journal-send.h"
#include "macro.h"

/* The wire format journald parses (journald-native.c): NAME=value lines, and a value
 * with a newline as NAME, '\n', its length as 64-bit little endian, the bytes, '\n'. */
static void test_serialize(void **state) {
        static const char expect[] = "MESSAGE=hello\nPRIORITY=6\nDETAIL\n\x05\0\0\0\0\0\0\0a\nb\0c\n";
        JournalField f[] = {
                { "MESSAGE", "hello world", 5 },
                { "PRIORITY", "6", SIZE_MAX },
                { "DETAIL", "a\nb\0c", 5 },
        };
        char *buf;
        size_t size;

        assert_int_equal(journal_serialize(f, ELEMENTSOF(f), &buf, &size), 0);
        assert_int_equal(size, sizeof expect - 1);
        assert_memory_equal(buf, expect, size);
        free(buf);
}

static int bind_dgram(char *path, size_t len) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        snprintf(path, len, "/tmp/test-journal-send.%d", (int) getpid());
        (void) unlink(path);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        assert_int_equal(bind(fd, (struct sockaddr *) &sa, sizeof sa), 0);
        return fd;
}

/* One datagram per entry, as journald reads them. */
static void test_send(void **state) {
        char path[108], buf[256];
        JournalField f[] = { { "MESSAGE", "line", SIZE_MAX }, { "CORRAL_JOB_ID", "42", SIZE_MAX } };
        int fd = bind_dgram(path, sizeof path);
        ssize_t k;

        assert_int_equal(journal_send_to(path, f, ELEMENTSOF(f)), 0);
        k = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        assert_int_equal(k, (ssize_t) strlen("MESSAGE=line\nCORRAL_JOB_ID=42\n"));
        assert_memory_equal(buf, "MESSAGE=line\nCORRAL_JOB_ID=42\n", (size_t) k);
        close(fd);
        unlink(path);
        /* No journald: an error, never a hang or a crash. */
        assert_true(journal_send_to(path, f, ELEMENTSOF(f)) < 0);
}

/* Waiting until the receiver has read what was sent: not while it has not, at once once
 * it has. */
static void test_wait_consumed(void **state) {
        char path[108], buf[256];
        JournalField f[] = { { "MESSAGE", "last words", SIZE_MAX } };
        int fd = bind_dgram(path, sizeof path);

        assert_int_equal(journal_send_to(path, f, ELEMENTSOF(f)), 0);
        assert_int_equal(journal_wait_consumed(3000), -ETIMEDOUT);
        assert_true(recv(fd, buf, sizeof buf, MSG_DONTWAIT) > 0);
        assert_int_equal(journal_wait_consumed(3000), 0);
        close(fd);
        unlink(path);
}

/* An entry larger than a datagram may be goes as a sealed memfd (journald refuses an
 * unsealed one), its content the same serialization. */
static void test_send_large(void **state) {
        char path[108], cbuf[CMSG_SPACE(sizeof(int))], data[16];
        size_t big = 4 * 1024 * 1024;
        char *value = malloc(big);
        JournalField f[] = { { "MESSAGE", value, big } };
        struct iovec iov = { data, sizeof data };
        struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf };
        int fd = bind_dgram(path, sizeof path), memfd;
        struct cmsghdr *c;

        assert_non_null(value);
        memset(value, 'x', big);
        assert_int_equal(journal_send_to(path, f, ELEMENTSOF(f)), 0);
        assert_true(recvmsg(fd, &mh, MSG_DONTWAIT) >= 0);
        c = CMSG_FIRSTHDR(&mh);
        assert_non_null(c);
        assert_int_equal(c->cmsg_type, SCM_RIGHTS);
        memcpy(&memfd, CMSG_DATA(c), sizeof memfd);
        assert_int_equal(lseek(memfd, 0, SEEK_END), (off_t) (strlen("MESSAGE=") + big + 1));
        assert_true(fcntl(memfd, F_GET_SEALS) & F_SEAL_WRITE);
        close(memfd);
        close(fd);
        unlink(path);
        free(value);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_serialize),
                cmocka_unit_test(test_send),
                cmocka_unit_test(test_wait_consumed),
                cmocka_unit_test(test_send_large),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

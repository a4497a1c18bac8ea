/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "fd-util.h"
#include "log.h"

static void test_errno_return(void **state) {
        int saved = dup(STDERR_FILENO), p[2];
        char buf[256] = {};

        assert_int_equal(pipe(p), 0);
        dup2(p[1], STDERR_FILENO);
        log_setup("test-log", LOG_TARGET_STDERR);
        log_set_max_level(LOG_INFO);

        /* Returns -abs(error) whichever sign it was given; %m is that error's text. */
        assert_int_equal(log_error_errno(ENOENT, "open failed: %m"), -ENOENT);
        assert_int_equal(log_error_errno(-EACCES, "x"), -EACCES);
        /* Below the max level nothing is printed but the value still propagates. */
        assert_int_equal(log_debug_errno(-EIO, "hidden"), -EIO);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(p[1]);
        assert_true(read(p[0], buf, sizeof buf - 1) > 0);
        close(p[0]);
        assert_non_null(strstr(buf, "test-log: open failed: No such file or directory\n"));
        assert_null(strstr(buf, "hidden"));
}

static void test_levels(void **state) {
        assert_int_equal(log_level_from_string("debug"), LOG_DEBUG);
        assert_int_equal(log_level_from_string("warning"), LOG_WARNING);
        assert_int_equal(log_level_from_string("error"), LOG_ERR);
        assert_int_equal(log_level_from_string("3"), 3);
        assert_int_equal(log_level_from_string("9"), -EINVAL);
        assert_int_equal(log_level_from_string("loud"), -EINVAL);
}

static void test_read_file(void **state) {
        char path[] = "/tmp/corral-test-XXXXXX";
        _cleanup_close_ int fd = mkstemp(path);
        char *s = NULL;
        size_t n;

        assert_true(fd >= 0);
        assert_int_equal(loop_write(fd, "hello\n", 6), 0);
        assert_int_equal(read_file_at(AT_FDCWD, path, 100, &s, &n), 0);
        assert_string_equal(s, "hello\n");
        assert_int_equal(n, 6);
        free(s);
        assert_int_equal(read_file_at(AT_FDCWD, path, 3, &s, &n), -EFBIG);
        unlink(path);
        assert_int_equal(read_file_at(AT_FDCWD, path, 100, &s, &n), -ENOENT);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_errno_return),
                cmocka_unit_test(test_levels),
                cmocka_unit_test(test_read_file),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* A scratch directory tree for filesystem tests (fake cgroupfs, sysfs, procfs): created
 * as a cmocka group/test fixture, opened as a dirfd root, removed afterwards. Include
 * after <cmocka.h>. */

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"

typedef struct Tree {
        char dir[64];
        int fd;
} Tree;

static inline int tree_setup_prefix(void **state, const char *prefix) {
        Tree *t = calloc(1, sizeof *t);

        assert_non_null(t);
        snprintf(t->dir, sizeof t->dir, "/tmp/%s.XXXXXX", prefix);
        assert_non_null(mkdtemp(t->dir));
        t->fd = open(t->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(t->fd >= 0);
        *state = t;
        return 0;
}

static inline int tree_teardown(void **state) {
        Tree *t = *state;
        char cmd[128];

        safe_close(t->fd);
        (void) snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
        assert_int_equal(system(cmd), 0);
        free(t);
        return 0;
}

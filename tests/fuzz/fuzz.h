/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Shared by the libFuzzer harnesses. A broken invariant aborts with a message, which
 * libFuzzer records as a crash with the input that caused it. */

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define fuzz_check(cond)                                                                   \
        do {                                                                               \
                if (!(cond)) {                                                             \
                        fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
                        abort();                                                           \
                }                                                                          \
        } while (0)

/* The input as a NUL-terminated string (cut at its first NUL, as C callers would see it). */
static inline char *fuzz_strndup(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        memcpy(s, data, size);
        s[size] = 0;
        return s;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text-util.h"

/* Each case: the bytes, what text_check() finds (with no character allowed) and where,
 * and what text_escape() makes of them. */
static void test_check_and_escape(void **state) {
        static const struct {
                const char *s;
                TextProblem problem;
                size_t offset;
                const char *escaped;
        } t[] = {
                { "", TEXT_OK, 0, "" },
                { "plain job_1.sh", TEXT_OK, 0, "plain job_1.sh" },
                { "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x8e", TEXT_OK, 0, "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x90\x8e" },
                { "back\\slash", TEXT_OK, 0, "back\\slash" },
                /* U+009B, the one-character CSI: "ESC [" to a terminal that honours C1. */
                { "a\xc2\x9b" "31mred", TEXT_CONTROL, 1, "a\\u009b31mred" },
                { "\xc2\x80\xc2\x9f", TEXT_CONTROL, 0, "\\u0080\\u009f" },
                { "\xc2\xa0ok", TEXT_OK, 0, "\xc2\xa0ok" }, /* U+00A0, the first after C1 */
                { "x\x1b[2J", TEXT_CONTROL, 1, "x\\x1b[2J" },
                { "a\tb\nc\rd\x7f", TEXT_CONTROL, 1, "a\\tb\\nc\\rd\\x7f" },
                /* Invalid UTF-8: a lone C1 byte (Latin-1's CSI), stray continuation, truncated,
                 * overlong NUL and '/', a surrogate, past U+10FFFF, 0xFF. */
                { "ab\x9b", TEXT_INVALID_UTF8, 2, "ab\\x9b" },
                { "\x80", TEXT_INVALID_UTF8, 0, "\\x80" },
                { "ok\xc3", TEXT_INVALID_UTF8, 2, "ok\\xc3" },
                { "\xe2\x9c", TEXT_INVALID_UTF8, 0, "\\xe2\\x9c" },
                { "n\xc0\x80", TEXT_INVALID_UTF8, 1, "n\\xc0\\x80" },
                { "\xe0\x80\xaf", TEXT_INVALID_UTF8, 0, "\\xe0\\x80\\xaf" },
                { "\xc1\x9b", TEXT_INVALID_UTF8, 0, "\\xc1\\x9b" }, /* overlong ESC [ */
                { "\xed\xa0\x80", TEXT_INVALID_UTF8, 0, "\\xed\\xa0\\x80" },
                { "\xf4\x90\x80\x80", TEXT_INVALID_UTF8, 0, "\\xf4\\x90\\x80\\x80" },
                { "\xff", TEXT_INVALID_UTF8, 0, "\\xff" },
        };

        for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
                size_t off = 12345;
                TextProblem p = text_check(t[i].s, strlen(t[i].s), 0, &off);
                char *e = text_escape(t[i].s);

                if (p != t[i].problem || (p != TEXT_OK && off != t[i].offset) || !e || strcmp(e, t[i].escaped) != 0)
                        fail_msg("case %zu: problem %d at %zu, escaped '%s'", i, p, off, e ?: "(null)");
                /* What text_escape() makes is always safe, and safe text is left alone. */
                assert_true(text_is_safe(e));
                assert_int_equal(text_is_safe(t[i].s), p == TEXT_OK);
                free(e);
        }
}

static void test_allow(void **state) {
        size_t off;

        assert_int_equal(text_check("a\tb\nc", 5, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, NULL), TEXT_OK);
        assert_int_equal(text_check("a\tb\nc", 5, TEXT_ALLOW_TAB, &off), TEXT_CONTROL);
        assert_int_equal(off, 3);
        assert_int_equal(text_check("a\tb\x1b", 4, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, &off), TEXT_CONTROL);
        assert_int_equal(off, 3);
        /* A NUL inside the length is a control character too. */
        assert_int_equal(text_check("a\0b", 3, 0, &off), TEXT_CONTROL);
        assert_int_equal(off, 1);
}

static void test_decode_one(void **state) {
        unsigned cp;

        assert_int_equal(utf8_decode_one("\xc2\x9b", 2, &cp), 2);
        assert_int_equal(cp, 0x9B);
        assert_int_equal(utf8_decode_one("\xf0\x9f\x90\x8e", 4, &cp), 4);
        assert_int_equal(cp, 0x1F40E);
        assert_int_equal(utf8_decode_one("\xf0\x9f\x90\x8e", 3, &cp), 0); /* cut by the length */
        assert_int_equal(utf8_decode_one("", 0, &cp), 0);
}

static void test_fputs_escaped(void **state) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        assert_non_null(f);
        assert_int_equal(fputs_escaped("name\xc2\x9b[1m", f), 0);
        assert_int_equal(fputs_escaped(NULL, f), 0);
        assert_int_equal(fputs_escaped(" ok", f), 0);
        assert_int_equal(fclose(f), 0);
        assert_string_equal(buf, "name\\u009b[1m ok");
        free(buf);
}

/* Output read in pieces: NUL bytes and the allowed tab and newline, a sequence cut at a
 * piece's end kept for the next, and the same result whatever the pieces. */
static void test_escape_stream(void **state) {
        static const char in[] = "a\tb\n\0\x1b[2J caf\xc3\xa9 \xe2\x9c\x93\r\xc2\x9b" "1m \xff\xc3";
        static const char want[] = "a\tb\n\\x00\\x1b[2J caf\xc3\xa9 \xe2\x9c\x93\\r\\u009b1m \\xff\\xc3";
        const size_t n = sizeof(in) - 1;
        char out[TEXT_ESCAPE_MAX(sizeof(in))], whole[TEXT_ESCAPE_MAX(sizeof(in))];
        size_t used, len;

        len = text_escape_stream(in, n, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, false, whole, &used);
        assert_int_equal(used, n);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(whole, want, len);

        /* Cut inside the three-byte check mark: the two bytes wait for the third. */
        len = text_escape_stream("ok \xe2\x9c", 5, 0, true, out, &used);
        assert_int_equal(used, 3);
        assert_int_equal(len, 3);
        /* Not when what follows the lead byte is no continuation: that is invalid now. */
        len = text_escape_stream("\xe2" "a", 2, 0, true, out, &used);
        assert_int_equal(used, 2);
        assert_int_equal(len, 5);
        assert_memory_equal(out, "\\xe2a", 5);
        /* Without more, the cut sequence is shown as the bytes it is. */
        len = text_escape_stream("\xe2\x9c", 2, 0, false, out, &used);
        assert_int_equal(used, 2);
        assert_memory_equal(out, "\\xe2\\x9c", len);

        /* Every way of cutting the input in two gives the whole's result. */
        for (size_t cut = 0; cut <= n; cut++) {
                char buf[sizeof(in)];
                size_t first, k = 0, rest;

                len = text_escape_stream(in, cut, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, true, out, &first);
                k = cut - first;
                memcpy(buf, in + first, k);
                memcpy(buf + k, in + cut, n - cut);
                len += text_escape_stream(buf, k + n - cut, TEXT_ALLOW_TAB | TEXT_ALLOW_NEWLINE, false, out + len, &rest);
                assert_int_equal(rest, k + n - cut);
                assert_int_equal(len, strlen(want));
                assert_memory_equal(out, want, len);
        }
        /* The bound holds for the worst case, every byte a \xHH. */
        assert_int_equal(text_escape_stream("\xff\xff\xff", 3, 0, false, out, NULL), TEXT_ESCAPE_MAX(3));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_check_and_escape),
                cmocka_unit_test(test_allow),
                cmocka_unit_test(test_decode_one),
                cmocka_unit_test(test_fputs_escaped),
                cmocka_unit_test(test_escape_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

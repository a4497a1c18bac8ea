/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* Text a user gave us and other users' terminals show: corrald refuses what a terminal
 * could take for a command when a string is submitted (text_check), and every program
 * that prints such a string escapes it anyway (text_escape), since data stored before
 * the check, the journal and a newer peer's fields are not checked. */

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "macro.h"

typedef enum TextProblem {
        TEXT_OK,
        TEXT_CONTROL,           /* a C0 control (U+0000..U+001F), DEL or a C1 control (U+0080..U+009F) */
        TEXT_INVALID_UTF8,      /* a stray or missing continuation byte, an overlong form, a
                                 * surrogate, beyond U+10FFFF */
} TextProblem;

typedef enum TextAllow {
        TEXT_ALLOW_TAB     = 1 << 0,
        TEXT_ALLOW_NEWLINE = 1 << 1,
} TextAllow;

/* The length of the valid UTF-8 sequence at s (at most n bytes), storing its code point;
 * 0 when it is not one. */
size_t utf8_decode_one(const char *s, size_t n, unsigned *ret_cp);

/* The first problem in s[0..n) and the byte offset where it starts. */
TextProblem text_check(const char *s, size_t n, unsigned allow, size_t *ret_offset);
const char *text_problem_to_string(TextProblem p) _const_;
/* NULL is safe; so is every string text_escape() returns. */
bool text_is_safe(const char *s) _pure_;

/* s with every control character and every byte of invalid UTF-8 made visible: C0
 * controls and DEL as \n, \t, \r or \xHH, C1 controls as \uHHHH, invalid bytes as \xHH.
 * Backslashes are kept as they are: the point is the terminal's safety, not a reversible
 * form. NULL in, "" out; NULL only when out of memory. */
char *text_escape(const char *s);
/* The most text_escape_stream() writes for n bytes: \u009f, six bytes for a two-byte
 * character; \xHH, four for one byte. */
#define TEXT_ESCAPE_MAX(n) ((n) * 4)
/* text_escape() for bytes read in pieces (a job's output file, a pipe), NUL bytes
 * included, keeping the characters in allow: s[0..n) escaped into out, which holds
 * TEXT_ESCAPE_MAX(n) bytes, not NUL-terminated. With more, a UTF-8 sequence cut short at
 * the end of s is left for the next piece: *ret_consumed says how much of s was used (all
 * of it without more). Returns the bytes written. */
size_t text_escape_stream(const char *s, size_t n, unsigned allow, bool more, char *out, size_t *ret_consumed);
/* fputs() of text_escape(s), without an allocation when s is safe. 0 or -EIO/-ENOMEM. */
int fputs_escaped(const char *s, FILE *f);
/* fprintf() with the whole result escaped: the format must not end in a newline, which
 * would be escaped too. 0 or -EIO/-ENOMEM. */
int fprintf_escaped(FILE *f, const char *fmt, ...) _printf_(2, 3);
int vfprintf_escaped(FILE *f, const char *fmt, va_list ap) _printf_(2, 0);

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "text-util.h"

size_t utf8_decode_one(const char *s, size_t n, unsigned *ret_cp) {
        const unsigned char *p = (const unsigned char *) s;
        unsigned cp, min;
        size_t len;

        if (n == 0)
                return 0;
        if (p[0] < 0x80) {
                len = 1, cp = p[0], min = 0;
        } else if ((p[0] & 0xE0) == 0xC0) {
                len = 2, cp = p[0] & 0x1F, min = 0x80;
        } else if ((p[0] & 0xF0) == 0xE0) {
                len = 3, cp = p[0] & 0x0F, min = 0x800;
        } else if ((p[0] & 0xF8) == 0xF0) {
                len = 4, cp = p[0] & 0x07, min = 0x10000;
        } else
                return 0; /* a continuation byte, or 0xF8..0xFF */
        if (len > n)
                return 0;
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3F);
        }
        /* Overlong forms (C0 80 for NUL, E0 80 AF for '/') hide a character from a
         * byte-wise check; surrogates and what lies beyond U+10FFFF are not characters. */
        if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
                return 0;
        if (ret_cp)
                *ret_cp = cp;
        return len;
}

static bool cp_is_control(unsigned cp, unsigned allow) {
        if (cp == '\t')
                return !(allow & TEXT_ALLOW_TAB);
        if (cp == '\n')
                return !(allow & TEXT_ALLOW_NEWLINE);
        return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F);
}

TextProblem text_check(const char *s, size_t n, unsigned allow, size_t *ret_offset) {
        for (size_t i = 0; i < n;) {
                unsigned cp;
                size_t l = utf8_decode_one(s + i, n - i, &cp);
                TextProblem p = l == 0 ? TEXT_INVALID_UTF8 : cp_is_control(cp, allow) ? TEXT_CONTROL : TEXT_OK;

                if (p != TEXT_OK) {
                        if (ret_offset)
                                *ret_offset = i;
                        return p;
                }
                i += l;
        }
        return TEXT_OK;
}

const char *text_problem_to_string(TextProblem p) {
        switch (p) {
        case TEXT_OK:
                return "valid text";
        case TEXT_CONTROL:
                return "a control character";
        case TEXT_INVALID_UTF8:
                return "invalid UTF-8";
        }
        return NULL;
}

bool text_is_safe(const char *s) {
        return !s || text_check(s, strlen(s), 0, NULL) == TEXT_OK;
}

/* The lead byte's sequence length when s[0..n) is the start of a sequence cut short by the
 * end of the buffer: the lead byte and only continuation bytes after it. 0 otherwise. */
static size_t utf8_cut_short(const char *s, size_t n) {
        const unsigned char *p = (const unsigned char *) s;
        size_t len;

        if ((p[0] & 0xE0) == 0xC0)
                len = 2;
        else if ((p[0] & 0xF0) == 0xE0)
                len = 3;
        else if ((p[0] & 0xF8) == 0xF0)
                len = 4;
        else
                return 0;
        if (n >= len)
                return 0;
        for (size_t i = 1; i < n; i++)
                if ((p[i] & 0xC0) != 0x80)
                        return 0;
        return len;
}

/* Not sprintf(): out has no room for its NUL. */
static char *put_hex(char *o, const char *prefix, unsigned v, unsigned digits) {
        o = stpcpy(o, prefix);
        for (unsigned d = digits; d > 0; d--)
                *o++ = "0123456789abcdef"[(v >> (4 * (d - 1))) & 0xF];
        return o;
}

size_t text_escape_stream(const char *s, size_t n, unsigned allow, bool more, char *out, size_t *ret_consumed) {
        char *o = out;
        size_t i = 0;

        while (i < n) {
                unsigned cp;
                size_t l = utf8_decode_one(s + i, n - i, &cp);

                if (l == 0) {
                        if (more && utf8_cut_short(s + i, n - i) > 0)
                                break; /* the rest of it comes with the next piece */
                        o = put_hex(o, "\\x", (unsigned char) s[i], 2);
                        i++;
                        continue;
                }
                if (!cp_is_control(cp, allow)) {
                        memcpy(o, s + i, l);
                        o += l;
                } else if (cp == '\n')
                        o = stpcpy(o, "\\n");
                else if (cp == '\t')
                        o = stpcpy(o, "\\t");
                else if (cp == '\r')
                        o = stpcpy(o, "\\r");
                else if (cp < 0x80)
                        o = put_hex(o, "\\x", cp, 2);
                else
                        o = put_hex(o, "\\u", cp, 4);
                i += l;
        }
        if (ret_consumed)
                *ret_consumed = i;
        return (size_t) (o - out);
}

char *text_escape(const char *s) {
        char *buf;
        size_t n;

        if (!s)
                return strdup("");
        n = strlen(s);
        buf = malloc(TEXT_ESCAPE_MAX(n) + 1);
        if (!buf)
                return NULL;
        buf[text_escape_stream(s, n, 0, false, buf, NULL)] = 0;
        return buf;
}

int fputs_escaped(const char *s, FILE *f) {
        char *e;
        int r;

        if (text_is_safe(s))
                return fputs(s ?: "", f) < 0 ? -EIO : 0;
        e = text_escape(s);
        if (!e)
                return -ENOMEM;
        r = fputs(e, f) < 0 ? -EIO : 0;
        free(e);
        return r;
}

int vfprintf_escaped(FILE *f, const char *fmt, va_list ap) {
        char *s;
        int r;

        if (vasprintf(&s, fmt, ap) < 0)
                return -ENOMEM;
        r = fputs_escaped(s, f);
        free(s);
        return r;
}

int fprintf_escaped(FILE *f, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vfprintf_escaped(f, fmt, ap);
        va_end(ap);
        return r;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "constraint.h"

/* Grammar:  or := and ('|' and)*   and := term ('&' term)*   term := NAME | '(' or ')'
 * One recursive descent serves both validation (features NULL, eval ignored) and
 * evaluation; the expression is at most CORRAL_CONSTRAINT_LENGTH_MAX bytes long. */

typedef struct Parser {
        const char *p;
        char *const *features;
        unsigned depth;
        bool ok;
} Parser;

static bool is_name_char(char c) {
        /* strchr() finds the terminator in any string: '\0' must not pass for a name's. */
        return c != '\0' && isascii((unsigned char) c) && (isalnum((unsigned char) c) || strchr("_.-", c));
}

static bool has_feature(char *const *features, const char *name, size_t n) {
        for (char *const *f = features; f && *f; f++)
                if (strlen(*f) == n && strncasecmp(*f, name, n) == 0)
                        return true;
        return false;
}

static bool parse_or(Parser *ps);

static bool parse_term(Parser *ps) {
        if (*ps->p == '(') {
                if (++ps->depth > CONSTRAINT_DEPTH_MAX) {
                        ps->ok = false;
                        return false;
                }
                ps->p++;
                bool v = parse_or(ps);
                if (*ps->p != ')')
                        ps->ok = false;
                else
                        ps->p++;
                ps->depth--;
                return v;
        }

        const char *start = ps->p;
        while (is_name_char(*ps->p))
                ps->p++;
        if (ps->p == start) {
                ps->ok = false;
                return false;
        }
        return has_feature(ps->features, start, ps->p - start);
}

static bool parse_and(Parser *ps) {
        bool v = parse_term(ps);
        while (ps->ok && *ps->p == '&') {
                ps->p++;
                v = parse_term(ps) && v;
        }
        return v;
}

static bool parse_or(Parser *ps) {
        bool v = parse_and(ps);
        while (ps->ok && *ps->p == '|') {
                ps->p++;
                v = parse_and(ps) || v;
        }
        return v;
}

static bool parse(const char *expr, char *const *features, bool *ret_value) {
        Parser ps = { .p = expr, .features = features, .ok = true };

        if (!expr)
                return false;
        bool v = parse_or(&ps);
        if (!ps.ok || *ps.p != '\0')
                return false;
        if (ret_value)
                *ret_value = v;
        return true;
}

bool constraint_is_valid(const char *expr) {
        return parse(expr, NULL, NULL);
}

bool constraint_matches(const char *expr, char *const *features) {
        bool v;

        return parse(expr, features, &v) && v;
}

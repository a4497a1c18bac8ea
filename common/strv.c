/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strv.h"

char **strv_free(char **l) {
        if (!l)
                return NULL;
        for (char **s = l; *s; s++)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;
        if (l)
                while (l[n])
                        n++;
        return n;
}

bool strv_contains(char *const *l, const char *s) {
        STRV_FOREACH(i, l)
                if (streq(*i, s))
                        return true;
        return false;
}

/* Keeps, in order, the elements keep() says to, freeing the others; whether any went. */
static bool strv_filter(char **l, bool (*keep)(const char *s, const void *userdata), const void *userdata) {
        char **w = l;
        bool removed = false;

        STRV_FOREACH(i, l) {
                if (keep(*i, userdata))
                        *w++ = *i;
                else {
                        free(*i);
                        removed = true;
                }
        }
        if (w)
                *w = NULL;
        return removed;
}

static bool differs(const char *s, const void *other) {
        return !streq(s, other);
}

static bool listed(const char *s, const void *list) {
        return strv_contains((char *const *) list, s);
}

bool strv_remove(char **l, const char *s) {
        return strv_filter(l, differs, s);
}

void strv_keep_listed(char **l, char *const *keep) {
        (void) strv_filter(l, listed, keep);
}

int strv_push(char ***l, char *s) {
        size_t n = strv_length(*l);
        char **c;

        c = reallocarray(*l, n + 2, sizeof(char *));
        if (!c)
                return -ENOMEM;
        c[n] = s;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extendf(char ***l, const char *fmt, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        r = strv_push(l, s);
        if (r < 0)
                free(s);
        return r;
}

int strv_extend(char ***l, const char *s) {
        char *d = strdup(s);
        if (!d)
                return -ENOMEM;
        if (strv_push(l, d) < 0) {
                free(d);
                return -ENOMEM;
        }
        return 0;
}

char **strv_copy(char *const *l) {
        _cleanup_strv_free_ char **c = new0(char *, strv_length(l) + 1);
        size_t i = 0;

        if (!c)
                return NULL;
        STRV_FOREACH(s, l) {
                c[i] = strdup(*s);
                if (!c[i])
                        return NULL;
                i++;
        }
        return TAKE_PTR(c);
}

int strv_split(const char *s, const char *separators, char ***ret) {
        _cleanup_strv_free_ char **l = new0(char *, 1);
        const char *p = s;

        if (!l)
                return -ENOMEM;
        while (*p) {
                size_t n;
                p += strspn(p, separators);
                n = strcspn(p, separators);
                if (n == 0)
                        break;
                char *w = strndup(p, n);
                if (!w || strv_push(&l, w) < 0) {
                        free(w);
                        return -ENOMEM;
                }
                p += n;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

const char *strv_env_get(char *const *l, const char *name) {
        size_t n = strlen(name);

        STRV_FOREACH(e, l)
                if (strneq(*e, name, n) && (*e)[n] == '=')
                        return *e + n + 1;
        return NULL;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fd-util.h"
#include "ini.h"
#include "parse-util.h"
#include "strv.h"

int ini_error(char **ret_error, const char *path, unsigned line, const char *fmt, ...) {
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        free(*ret_error);
        if (asprintf(ret_error, "%s:%u: %s", path, line, msg) < 0)
                *ret_error = NULL;
        return -EINVAL;
}

static char *strip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

/* The index of the first item of items[i]'s section. */
static size_t section_first(const IniItem *items, size_t i) {
        while (i > 0 && streq(items[i - 1].section, items[i].section))
                i--;
        return i;
}

bool ini_item_set(const IniItem *items, size_t i, uint64_t set) {
        return set & (UINT64_C(1) << (i - section_first(items, i)));
}

/* Each section's items together, at most INI_ITEMS_MAX of them: what the masks need. */
static bool items_grouped(const IniItem *items, size_t n) {
        for (size_t i = 0; i < n; i++) {
                size_t first = section_first(items, i);
                if (i - first >= INI_ITEMS_MAX)
                        return false;
                for (size_t k = 0; k < first; k++)
                        if (streq(items[k].section, items[i].section))
                                return false;
        }
        return true;
}

typedef struct Section {
        const char *name; /* points into the file's text */
        void *target;
        uint64_t set;
        unsigned line;
} Section;

static int section_close(Section *sec, const IniOps *ops, void *userdata, const char *path, char **ret_error) {
        int r = 0;

        if (sec->name && ops->section_end)
                r = ops->section_end(userdata, sec->name, sec->target, sec->set, path, sec->line, ret_error);
        *sec = (Section) {};
        return r;
}

int ini_load(const char *path, size_t max_size, const IniItem *items, size_t n_items, const IniOps *ops,
             void *userdata, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        Section sec = {};
        unsigned line = 0;
        size_t size = 0;
        char *p, *next;
        int r;

        /* A table's shape, not the file's: checked in every build type, not only under assert(). */
        if (!items_grouped(items, n_items))
                return -EINVAL;

        r = read_file_at(AT_FDCWD, path, max_size, &text, &size);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                free(*ret_error);
                if (asprintf(ret_error, "%s: cannot read: %s", path, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        /* A NUL would end the text early and hide what follows it from the checks. */
        if (memchr(text, 0, size)) {
                for (const char *c = text; c < (const char *) memchr(text, 0, size); c++)
                        if (*c == '\n')
                                line++;
                return ini_error(ret_error, path, line + 1, "a NUL byte in the file");
        }
        for (p = text; p; p = next) {
                char *l, *eq, *key, *value;
                size_t i;

                next = strchr(p, '\n');
                if (next)
                        *next++ = 0;
                line++;
                l = strip(p);
                if (*l == 0 || *l == '#' || *l == ';')
                        continue;
                if (*l == '[') {
                        size_t n = strlen(l);
                        if (l[n - 1] != ']')
                                return ini_error(ret_error, path, line, "section header without ']': %s", l);
                        r = section_close(&sec, ops, userdata, path, ret_error);
                        if (r < 0)
                                return r;
                        l[n - 1] = 0;
                        sec = (Section) { .name = l + 1, .line = line };
                        sec.target = ops->section_begin(userdata, sec.name);
                        if (!sec.target) {
                                sec.name = NULL;
                                return ini_error(ret_error, path, line, "unknown section [%s] (known: %s)", l + 1,
                                                 ops->known);
                        }
                        continue;
                }
                eq = strchr(l, '=');
                if (!eq)
                        return ini_error(ret_error, path, line, "expected KEY=VALUE, got '%s'", l);
                *eq = 0;
                key = strip(l);
                value = strip(eq + 1);
                if (!sec.name)
                        return ini_error(ret_error, path, line, "%s= outside of a section", key);
                for (i = 0; i < n_items; i++)
                        if (streq(items[i].section, sec.name) && streq(items[i].key, key))
                                break;
                if (i >= n_items)
                        return ini_error(ret_error, path, line, "unknown key %s= in [%s]", key, sec.name);
                r = items[i].parse(value, (char *) sec.target + items[i].offset);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return ini_error(ret_error, path, line, "invalid value for %s=, expected %s", key,
                                         items[i].expect);
                sec.set |= UINT64_C(1) << (i - section_first(items, i));
        }
        return section_close(&sec, ops, userdata, path, ret_error);
}

int ini_parse_string(const char *v, void *field) {
        char **s = field, *d = strdup(v);

        if (!d)
                return -ENOMEM;
        free(*s);
        *s = isempty(d) ? mfree(d) : d;
        return 0;
}

int ini_parse_bool(const char *v, void *field) {
        int b = parse_boolean(v);

        if (b < 0)
                return b;
        *(bool *) field = b;
        return 0;
}

int ini_parse_sec(const char *v, void *field) {
        uint64_t s;
        int r = parse_duration(v, DURATION_PBS, &s);

        if (r < 0)
                return r;
        *(uint64_t *) field = s == DURATION_INFINITY ? 0 : s;
        return 0;
}

int ini_parse_u32(const char *v, void *field) {
        unsigned u;
        int r = safe_atou(v, &u);

        if (r < 0)
                return r;
        *(uint32_t *) field = u;
        return 0;
}

int ini_parse_u64(const char *v, void *field) {
        return safe_atou64(v, (uint64_t *) field);
}

int ini_parse_i32(const char *v, void *field) {
        int i, r = safe_atoi(v, &i);

        if (r < 0)
                return r;
        if (i < -1000000 || i > 1000000)
                return -ERANGE;
        *(int32_t *) field = i;
        return 0;
}

int ini_parse_bytes(const char *v, void *field) {
        uint64_t b;
        int r = parse_size(v, 1, &b);

        if (r < 0)
                return r;
        *(uint64_t *) field = b;
        return 0;
}

int ini_parse_double(const char *v, void *field) {
        char *end;
        double d;

        errno = 0;
        d = strtod(v, &end);
        if (errno != 0 || end == v || *end || !(d >= 0.0) || d > 1e9)
                return -EINVAL;
        *(double *) field = d;
        return 0;
}

int ini_parse_strv(const char *v, void *field) {
        char ***l = field, **add = NULL;
        int r;

        if (isempty(v)) {
                *l = strv_free(*l);
                return 0;
        }
        r = strv_split(v, " \t,", &add);
        if (r < 0)
                return r;
        STRV_FOREACH(s, add)
                if (strv_extend(l, *s) < 0) {
                        strv_free(add);
                        return -ENOMEM;
                }
        strv_free(add);
        return 0;
}

int ini_parse_strv_checked(const char *v, void *field, bool (*valid)(const char *s)) {
        char ***l = field;
        int r = ini_parse_strv(v, field);

        if (r < 0)
                return r;
        STRV_FOREACH(s, *l)
                if (!valid(*s))
                        return -EINVAL;
        return 0;
}

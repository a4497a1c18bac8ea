/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "parse-util.h"
#include "unit-name.h"

#define JOB_SCOPE_PREFIX "corral-job-"
#define JOB_SCOPE_SUFFIX ".scope"
#define SLICE_PREFIX "corral-"
#define SLICE_SUFFIX ".slice"
#define SLICE_HOLD_SUFFIX "-controllers"

static bool char_is_plain(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == ':' || c == '_' || c == '.';
}

static char *escape_char(char *t, char c) {
        static const char hex[] = "0123456789abcdef";

        *t++ = '\\';
        *t++ = 'x';
        *t++ = hex[(unsigned char) c >> 4];
        *t++ = hex[(unsigned char) c & 15];
        return t;
}

static int escape(const char *s, bool slash_to_dash, char **ret) {
        char *buf, *t;

        assert(ret);
        if (isempty(s))
                return -EINVAL;

        buf = malloc(strlen(s) * 4 + 1);
        if (!buf)
                return -ENOMEM;
        t = buf;
        for (const char *f = s; *f; f++) {
                if (f == s && *f == '.')
                        t = escape_char(t, *f); /* a leading dot would make a hidden file */
                else if (*f == '/' && slash_to_dash)
                        *t++ = '-';
                else if (char_is_plain(*f))
                        *t++ = *f;
                else
                        t = escape_char(t, *f);
        }
        *t = 0;
        *ret = buf;
        return 0;
}

int unit_name_escape(const char *s, char **ret) {
        return escape(s, true, ret);
}

int unit_name_job_scope(uint64_t id, char **ret) {
        assert(ret);
        if (asprintf(ret, JOB_SCOPE_PREFIX "%" PRIu64 JOB_SCOPE_SUFFIX, id) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int unit_name_project_slice(const char *project, char **ret) {
        _cleanup_free_ char *e = NULL;
        char *name;
        int r;

        assert(ret);
        r = escape(project, false, &e);
        if (r < 0)
                return r;
        if (strlen(SLICE_PREFIX) + strlen(e) + strlen(SLICE_SUFFIX) > UNIT_NAME_MAX)
                return -EINVAL;
        if (asprintf(&name, SLICE_PREFIX "%s" SLICE_SUFFIX, e) < 0)
                return -ENOMEM;
        *ret = name;
        return 0;
}

/* The part of name between prefix and suffix (non-empty), and its length; NULL if name
 * is not prefix + something + suffix. */
static const char *name_middle(const char *name, const char *prefix, const char *suffix, size_t *ret_len) {
        size_t n, np = strlen(prefix), ns = strlen(suffix);

        if (!name)
                return NULL;
        n = strlen(name);
        if (n <= np + ns || !strneq(name, prefix, np) || !streq(name + n - ns, suffix))
                return NULL;
        *ret_len = n - np - ns;
        return name + np;
}

int unit_name_slice_hold(const char *slice, char **ret) {
        const char *mid;
        size_t len;

        assert(ret);
        *ret = NULL;
        mid = name_middle(slice, SLICE_PREFIX, SLICE_SUFFIX, &len);
        if (!mid || memchr(mid, '-', len) ||
            strlen(SLICE_PREFIX) + len + strlen(SLICE_HOLD_SUFFIX SLICE_SUFFIX) > UNIT_NAME_MAX)
                return -EINVAL;
        if (asprintf(ret, SLICE_PREFIX "%.*s" SLICE_HOLD_SUFFIX SLICE_SUFFIX, (int) len, mid) < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int unit_name_job_id(const char *name, uint64_t *ret) {
        _cleanup_free_ char *digits = NULL;
        const char *mid;
        size_t len;

        assert(ret);
        mid = name_middle(name, JOB_SCOPE_PREFIX, JOB_SCOPE_SUFFIX, &len);
        if (!mid)
                return -EINVAL;
        digits = strndup(mid, len);
        if (!digits)
                return -ENOMEM;
        if (strspn(digits, "0123456789") != strlen(digits))
                return -EINVAL;
        if (digits[0] == '0' && digits[1])
                return -EINVAL; /* one job, one name */
        return safe_atou64(digits, ret);
}

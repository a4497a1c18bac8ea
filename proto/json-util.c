/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "strv.h"

int json_get_string(json_object *o, size_t min_len, size_t max_len, const char **ret) {
        const char *s;
        int len;

        if (!json_object_is_type(o, json_type_string))
                return -EINVAL;
        s = json_object_get_string(o);
        len = json_object_get_string_len(o);
        if (!s || len < 0)
                return -EINVAL;
        /* "\u0000" decodes to an embedded NUL that C strings would silently truncate. */
        if (strlen(s) != (size_t) len)
                return -EINVAL;
        if ((size_t) len < min_len || (size_t) len > max_len)
                return -EINVAL;
        if (ret)
                *ret = s;
        return 0;
}

int json_dup_string(json_object *o, size_t min_len, size_t max_len, char **ret) {
        const char *s;
        char *d;
        int r;

        r = json_get_string(o, min_len, max_len, &s);
        if (r < 0)
                return r;
        d = strdup(s);
        if (!d)
                return -ENOMEM;
        *ret = d;
        return 0;
}

int json_get_u64(json_object *o, uint64_t min, uint64_t max, uint64_t *ret) {
        int64_t i;
        uint64_t u;

        assert(max <= (uint64_t) INT64_MAX - 1);

        if (!json_object_is_type(o, json_type_int))
                return -EINVAL;
        i = json_object_get_int64(o);
        u = json_object_get_uint64(o);
        if (i < 0)
                return -EINVAL;
        if (u < min || u > max)
                return -EINVAL;
        if (ret)
                *ret = u;
        return 0;
}

int json_get_i64(json_object *o, int64_t min, int64_t max, int64_t *ret) {
        int64_t i;

        assert(min > INT64_MIN && max < INT64_MAX);

        if (!json_object_is_type(o, json_type_int))
                return -EINVAL;
        i = json_object_get_int64(o);
        if (i < min || i > max)
                return -EINVAL;
        if (ret)
                *ret = i;
        return 0;
}

int json_get_bool(json_object *o, bool *ret) {
        if (!json_object_is_type(o, json_type_boolean))
                return -EINVAL;
        if (ret)
                *ret = json_object_get_boolean(o);
        return 0;
}

int json_get_strv(json_object *o, size_t max_entries, size_t max_len, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        size_t n;

        if (!json_object_is_type(o, json_type_array))
                return -EINVAL;
        n = json_object_array_length(o);
        if (n > max_entries)
                return -EINVAL;
        l = new0(char *, n + 1);
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                int r = json_dup_string(json_object_array_get_idx(o, i), 0, max_len, &l[i]);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int json_parse_strict(const char *text, size_t len, json_object **ret) {
        _cleanup_json_tokener_ json_tokener *tok = NULL;
        _cleanup_json_ json_object *o = NULL;
        size_t end;

        if (len > INT_MAX)
                return -EMSGSIZE;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        o = json_tokener_parse_ex(tok, text, (int) len);
        if (!o || json_tokener_get_error(tok) != json_tokener_success)
                return -EBADMSG;
        end = json_tokener_get_parse_end(tok);
        for (; end < len; end++)
                if (!strchr(" \t\r\n", text[end]))
                        return -EBADMSG;
        *ret = TAKE_PTR(o);
        return 0;
}

int json_add(json_object *o, const char *key, json_object *value) {
        if (!value)
                return -ENOMEM;
        if (json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_add_string(json_object *o, const char *key, const char *s) {
        if (!s)
                return 0;
        return json_add(o, key, json_object_new_string(s));
}

int json_add_u64(json_object *o, const char *key, uint64_t v) {
        return json_add(o, key, json_object_new_uint64(v));
}

int json_array_add_printf(json_object *a, const char *fmt, ...) {
        json_object *s;
        char buf[512];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        s = json_object_new_string(buf);
        if (!s || json_object_array_add(a, s) < 0) {
                json_object_put(s);
                return -ENOMEM;
        }
        return 0;
}

int json_add_i64(json_object *o, const char *key, int64_t v) {
        return json_add(o, key, json_object_new_int64(v));
}

int json_add_bool(json_object *o, const char *key, bool b) {
        return json_add(o, key, json_object_new_boolean(b));
}

json_object *json_new_strv(char *const *l) {
        _cleanup_json_ json_object *a = NULL;

        a = json_object_new_array_ext((int) strv_length(l));
        if (!a)
                return NULL;
        STRV_FOREACH(s, l) {
                json_object *e = json_object_new_string(*s);
                if (!e || json_object_array_add(a, e) < 0) {
                        json_object_put(e);
                        return NULL;
                }
        }
        return TAKE_PTR(a);
}

int json_add_strv(json_object *o, const char *key, char *const *l) {
        if (!l)
                return 0;
        return json_add(o, key, json_new_strv(l));
}

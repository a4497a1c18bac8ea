/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "parse-util.h"

/* After strtoull()/strtoll() with errno cleared: out of range, or not all digits. */
static int strto_result(const char *end) {
        if (errno == ERANGE)
                return -ERANGE;
        if (*end != '\0')
                return -EINVAL;
        return 0;
}

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;
        int r;

        if (isempty(s) || !isdigit((unsigned char) s[0]))
                return -EINVAL; /* strtoull would accept " 1", "+1" and "-1" */
        errno = 0;
        v = strtoull(s, &end, 10);
        r = strto_result(end);
        if (r < 0)
                return r;
        if (ret)
                *ret = (uint64_t) v;
        return 0;
}

int safe_atoi64(const char *s, int64_t *ret) {
        long long v;
        char *end;
        int r;

        if (isempty(s) || !(isdigit((unsigned char) s[0]) || (s[0] == '-' && isdigit((unsigned char) s[1]))))
                return -EINVAL;
        errno = 0;
        v = strtoll(s, &end, 10);
        r = strto_result(end);
        if (r < 0)
                return r;
        if (ret)
                *ret = (int64_t) v;
        return 0;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT_MAX)
                return -ERANGE;
        if (ret)
                *ret = (unsigned) v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        if (ret)
                *ret = (int) v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++)
                if (strcasecmp(s, yes[i]) == 0)
                        return 1;
        for (size_t i = 0; i < ELEMENTSOF(no); i++)
                if (strcasecmp(s, no[i]) == 0)
                        return 0;
        return -EINVAL;
}

/* Multiplies with overflow check. */
static int mul_u64(uint64_t a, uint64_t b, uint64_t *ret) {
        if (__builtin_mul_overflow(a, b, ret))
                return -ERANGE;
        return 0;
}

static int add_u64(uint64_t a, uint64_t b, uint64_t *ret) {
        if (__builtin_add_overflow(a, b, ret))
                return -ERANGE;
        return 0;
}

int parse_size(const char *s, uint64_t default_unit, uint64_t *ret) {
        static const char units[] = "KMGTPE";
        uint64_t whole = 0, frac_num = 0, frac_den = 1, unit, v;
        const char *p = s;
        int r;

        if (isempty(s) || !isdigit((unsigned char) *p))
                return -EINVAL;
        for (; isdigit((unsigned char) *p); p++) {
                if ((r = mul_u64(whole, 10, &whole)) < 0 || (r = add_u64(whole, (uint64_t) (*p - '0'), &whole)) < 0)
                        return r;
        }
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                for (; isdigit((unsigned char) *p); p++)
                        if (frac_den < UINT64_C(1000000000)) { /* more digits add nothing useful */
                                frac_num = frac_num * 10 + (uint64_t) (*p - '0');
                                frac_den *= 10;
                        }
        }

        if (*p == '\0')
                unit = default_unit;
        else {
                const char *u = strchr(units, toupper((unsigned char) *p));

                if (toupper((unsigned char) *p) == 'B' && p[1] == '\0')
                        unit = 1;
                else if (!u || *u == '\0')
                        return -EINVAL;
                else {
                        unit = UINT64_C(1) << (10 * (u - units + 1));
                        p++;
                        if (*p == 'i' && toupper((unsigned char) p[1]) == 'B')
                                p += 2;
                        else if (toupper((unsigned char) *p) == 'B')
                                p++;
                        if (*p != '\0')
                                return -EINVAL;
                }
        }

        if (frac_num != 0 && unit == 1)
                return -EINVAL; /* "1.5" bytes */
        if ((r = mul_u64(whole, unit, &v)) < 0)
                return r;
        if ((r = add_u64(v, (unit / frac_den) * frac_num + (unit % frac_den) * frac_num / frac_den, &v)) < 0)
                return r;
        if (ret)
                *ret = v;
        return 0;
}

/* Parses a run of digits into *ret, advancing *p. */
static int eat_number(const char **p, uint64_t *ret) {
        uint64_t v = 0;
        int r;

        if (!isdigit((unsigned char) **p))
                return -EINVAL;
        for (; isdigit((unsigned char) **p); (*p)++)
                if ((r = mul_u64(v, 10, &v)) < 0 || (r = add_u64(v, (uint64_t) (**p - '0'), &v)) < 0)
                        return r;
        *ret = v;
        return 0;
}

static int parse_duration_words(const char *s, uint64_t *ret) {
        static const struct {
                const char *suffix;
                uint64_t sec;
        } table[] = {
                /* Longest first so "min" is not read as "m" + junk. */
                { "seconds", 1 }, { "second", 1 }, { "sec", 1 }, { "s", 1 },
                { "minutes", 60 }, { "minute", 60 }, { "min", 60 }, { "m", 60 },
                { "hours", 3600 }, { "hour", 3600 }, { "hr", 3600 }, { "h", 3600 },
                { "days", 86400 }, { "day", 86400 }, { "d", 86400 },
                { "weeks", 604800 }, { "week", 604800 }, { "w", 604800 },
        };
        const char *p = s;
        uint64_t total = 0;
        int r;

        while (*p) {
                uint64_t n, v;
                size_t i;

                while (*p == ' ')
                        p++;
                if ((r = eat_number(&p, &n)) < 0)
                        return r;
                while (*p == ' ')
                        p++;
                for (i = 0; i < ELEMENTSOF(table); i++) {
                        size_t l = strlen(table[i].suffix);
                        if (strncmp(p, table[i].suffix, l) == 0 && !isalpha((unsigned char) p[l]))
                                break;
                }
                if (i >= ELEMENTSOF(table))
                        return -EINVAL;
                p += strlen(table[i].suffix);
                if ((r = mul_u64(n, table[i].sec, &v)) < 0 || (r = add_u64(total, v, &total)) < 0)
                        return r;
                while (*p == ' ')
                        p++;
        }
        *ret = total;
        return 0;
}

int parse_duration(const char *s, DurationDialect dialect, uint64_t *ret_sec) {
        uint64_t f[4], days = 0, h = 0, m = 0, sec = 0, v;
        const char *p = s;
        bool have_days = false;
        size_t n = 0;
        int r;

        if (isempty(s))
                return -EINVAL;
        if (strcasecmp(s, "infinity") == 0 || strcasecmp(s, "unlimited") == 0 ||
            strcasecmp(s, "infinite") == 0) {
                if (ret_sec)
                        *ret_sec = DURATION_INFINITY;
                return 0;
        }

        /* Unit words ("2h30m") when any letter is present. */
        for (const char *q = s; *q; q++)
                if (isalpha((unsigned char) *q)) {
                        r = parse_duration_words(s, &v);
                        if (r < 0)
                                return r;
                        if (ret_sec)
                                *ret_sec = v;
                        return 0;
                }

        if ((r = eat_number(&p, &f[n++])) < 0)
                return r;
        if (*p == '-') {
                if (dialect != DURATION_SLURM)
                        return -EINVAL;
                have_days = true;
                days = f[0];
                n = 0;
                p++;
                if ((r = eat_number(&p, &f[n++])) < 0)
                        return r;
        }
        while (*p == ':') {
                p++;
                if (n >= 3)
                        return -EINVAL;
                if ((r = eat_number(&p, &f[n++])) < 0)
                        return r;
        }
        if (*p != '\0')
                return -EINVAL;

        if (have_days) {
                /* D-H, D-H:M, D-H:M:S */
                h = f[0];
                m = n > 1 ? f[1] : 0;
                sec = n > 2 ? f[2] : 0;
        } else if (n == 1) {
                if (dialect == DURATION_SLURM)
                        m = f[0];
                else
                        sec = f[0];
        } else if (n == 2) {
                m = f[0];
                sec = f[1];
        } else {
                h = f[0];
                m = f[1];
                sec = f[2];
        }

        if ((r = mul_u64(days, 86400, &days)) < 0 || (r = mul_u64(h, 3600, &h)) < 0 ||
            (r = mul_u64(m, 60, &m)) < 0 || (r = add_u64(days, h, &v)) < 0 ||
            (r = add_u64(v, m, &v)) < 0 || (r = add_u64(v, sec, &v)) < 0)
                return r;
        if (v == DURATION_INFINITY)
                return -ERANGE;
        if (ret_sec)
                *ret_sec = v;
        return 0;
}

char *format_duration(char *buf, size_t size, uint64_t sec) {
        if (sec == DURATION_INFINITY)
                snprintf(buf, size, "UNLIMITED");
        else if (sec >= 86400)
                snprintf(buf, size, "%" PRIu64 "-%02u:%02u:%02u", sec / 86400,
                         (unsigned) (sec % 86400 / 3600), (unsigned) (sec % 3600 / 60), (unsigned) (sec % 60));
        else
                snprintf(buf, size, "%02u:%02u:%02u", (unsigned) (sec / 3600), (unsigned) (sec % 3600 / 60),
                         (unsigned) (sec % 60));
        return buf;
}

char *format_size(char *buf, size_t size, uint64_t bytes) {
        static const char units[] = "KMGTPE";
        int i = -1;
        uint64_t div = 1;

        while (i < 5 && bytes / div >= 1024) {
                div *= 1024;
                i++;
        }
        if (i < 0)
                snprintf(buf, size, "%" PRIu64 "B", bytes);
        else if (bytes % div == 0)
                snprintf(buf, size, "%" PRIu64 "%c", bytes / div, units[i]);
        else
                snprintf(buf, size, "%.1f%c", (double) bytes / (double) div, units[i]);
        return buf;
}

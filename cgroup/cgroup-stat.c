/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-stat.h"
#include "parse-util.h"

typedef struct FlatKey {
        const char *name;
        size_t offset; /* of a uint64_t in the output struct */
} FlatKey;

/* Splits the next line off *p into a NUL-terminated copy in buf. Returns 0 at the end. */
static int next_line(const char **p, char *buf, size_t size) {
        const char *e;
        size_t n;

        if (!**p)
                return 0;
        e = strchrnul(*p, '\n');
        n = (size_t) (e - *p);
        if (n >= size)
                return -EBADMSG; /* no legitimate line in these files comes close */
        memcpy(buf, *p, n);
        buf[n] = 0;
        *p = *e ? e + 1 : e;
        return 1;
}

/* The "key value\n" files: cpu.stat, memory.events, cgroup.events, memory.stat. */
static int parse_flat_keyed(const char *s, const FlatKey *keys, size_t n_keys, void *out) {
        const char *p = s;
        char line[256];
        int r;

        if (!s)
                return -EINVAL;
        while ((r = next_line(&p, line, sizeof line)) > 0) {
                char *space;
                uint64_t v;

                if (!line[0])
                        continue; /* tolerate a trailing empty line */
                space = strchr(line, ' ');
                if (!space || space == line)
                        return -EBADMSG;
                *space = 0;
                if (safe_atou64(space + 1, &v) < 0)
                        return -EBADMSG;
                for (size_t i = 0; i < n_keys; i++)
                        if (streq(line, keys[i].name)) {
                                memcpy((uint8_t *) out + keys[i].offset, &v, sizeof v);
                                break;
                        }
        }
        return r;
}

int cg_parse_cpu_stat(const char *s, CgroupCpuStat *ret) {
        static const FlatKey keys[] = {
                { "usage_usec", offsetof(CgroupCpuStat, usage_usec) },
                { "user_usec", offsetof(CgroupCpuStat, user_usec) },
                { "system_usec", offsetof(CgroupCpuStat, system_usec) },
                { "nr_throttled", offsetof(CgroupCpuStat, nr_throttled) },
                { "throttled_usec", offsetof(CgroupCpuStat, throttled_usec) },
        };
        CgroupCpuStat st = {};
        int r;

        assert(ret);
        r = parse_flat_keyed(s, keys, ELEMENTSOF(keys), &st);
        if (r < 0)
                return r;
        *ret = st;
        return 0;
}

int cg_parse_memory_events(const char *s, CgroupMemoryEvents *ret) {
        static const FlatKey keys[] = {
                { "low", offsetof(CgroupMemoryEvents, low) },
                { "high", offsetof(CgroupMemoryEvents, high) },
                { "max", offsetof(CgroupMemoryEvents, max) },
                { "oom", offsetof(CgroupMemoryEvents, oom) },
                { "oom_kill", offsetof(CgroupMemoryEvents, oom_kill) },
                { "oom_group_kill", offsetof(CgroupMemoryEvents, oom_group_kill) },
        };
        CgroupMemoryEvents ev = {};
        int r;

        assert(ret);
        r = parse_flat_keyed(s, keys, ELEMENTSOF(keys), &ev);
        if (r < 0)
                return r;
        *ret = ev;
        return 0;
}

int cg_parse_events(const char *s, CgroupEvents *ret) {
        struct {
                uint64_t populated, frozen;
        } raw = {};
        static const FlatKey keys[] = {
                { "populated", offsetof(typeof(raw), populated) },
                { "frozen", offsetof(typeof(raw), frozen) },
        };
        int r;

        assert(ret);
        r = parse_flat_keyed(s, keys, ELEMENTSOF(keys), &raw);
        if (r < 0)
                return r;
        if (raw.populated > 1 || raw.frozen > 1)
                return -EBADMSG;
        *ret = (CgroupEvents) {
                .populated = raw.populated,
                .frozen = raw.frozen,
        };
        return 0;
}

static int parse_maj_min(const char *s, unsigned *ret_major, unsigned *ret_minor) {
        _cleanup_free_ char *maj = NULL;
        const char *colon = strchr(s, ':');

        if (!colon)
                return -EINVAL;
        maj = strndup(s, (size_t) (colon - s));
        if (!maj)
                return -ENOMEM;
        if (safe_atou(maj, ret_major) < 0 || safe_atou(colon + 1, ret_minor) < 0)
                return -EINVAL;
        return 0;
}

int cg_parse_io_stat(const char *s, CgroupIoStat *ret) {
        static const FlatKey keys[] = {
                { "rbytes", offsetof(CgroupIoDevice, rbytes) },
                { "wbytes", offsetof(CgroupIoDevice, wbytes) },
                { "rios", offsetof(CgroupIoDevice, rios) },
                { "wios", offsetof(CgroupIoDevice, wios) },
                { "dbytes", offsetof(CgroupIoDevice, dbytes) },
                { "dios", offsetof(CgroupIoDevice, dios) },
        };
        _cleanup_free_ CgroupIoDevice *devs = NULL;
        size_t n = 0, allocated = 0;
        const char *p = s;
        char line[1024];
        int r;

        assert(ret);
        if (!s)
                return -EINVAL;

        while ((r = next_line(&p, line, sizeof line)) > 0) {
                CgroupIoDevice d = {};
                char *tok, *save = NULL;

                if (!line[0])
                        continue;
                tok = strtok_r(line, " ", &save);
                if (!tok)
                        return -EBADMSG;
                r = parse_maj_min(tok, &d.major, &d.minor);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return -EBADMSG;

                while ((tok = strtok_r(NULL, " ", &save))) {
                        char *eq = strchr(tok, '=');
                        uint64_t v;

                        if (!eq || eq == tok)
                                return -EBADMSG;
                        *eq = 0;
                        if (safe_atou64(eq + 1, &v) < 0)
                                return -EBADMSG;
                        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                                if (streq(tok, keys[i].name)) {
                                        memcpy((uint8_t *) &d + keys[i].offset, &v, sizeof v);
                                        break;
                                }
                }

                if (!GREEDY_REALLOC(devs, allocated, n + 1))
                        return -ENOMEM;
                devs[n++] = d;
        }
        if (r < 0)
                return r;

        *ret = (CgroupIoStat) {
                .devices = TAKE_PTR(devs),
                .n_devices = n,
        };
        return 0;
}

void cgroup_io_stat_done(CgroupIoStat *st) {
        if (!st)
                return;
        st->devices = mfree(st->devices);
        st->n_devices = 0;
}

void cgroup_io_stat_total(const CgroupIoStat *st, CgroupIoDevice *ret) {
        CgroupIoDevice t = {};

        for (size_t i = 0; i < st->n_devices; i++) {
                t.rbytes += st->devices[i].rbytes;
                t.wbytes += st->devices[i].wbytes;
                t.rios += st->devices[i].rios;
                t.wios += st->devices[i].wios;
                t.dbytes += st->devices[i].dbytes;
                t.dios += st->devices[i].dios;
        }
        *ret = t;
}

int cg_parse_u64_or_max(const char *s, uint64_t *ret) {
        _cleanup_free_ char *copy = NULL;
        size_t n;

        assert(ret);
        if (!s)
                return -EINVAL;
        n = strlen(s);
        if (n > 0 && s[n - 1] == '\n')
                n--;
        copy = strndup(s, n);
        if (!copy)
                return -ENOMEM;
        if (streq(copy, "max")) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (safe_atou64(copy, ret) < 0)
                return -EBADMSG;
        return 0;
}

/* "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull avg10=... total=678\n": only
 * the totals count (the averages are the kernel's smoothing for monitors). */
int cg_parse_pressure(const char *s, CgroupPressure *ret) {
        CgroupPressure p = {};
        bool have_some = false;

        assert(s);
        assert(ret);

        while (*s) {
                const char *eol = strchrnul(s, '\n'), *t;
                size_t len = (size_t) (eol - s);
                uint64_t *dst = NULL, v = 0;
                bool total = false;

                if (len == 0) {
                        s = *eol ? eol + 1 : eol;
                        continue;
                }
                if (len > 5 && strneq(s, "some ", 5))
                        dst = &p.some_usec, have_some = true;
                else if (len > 5 && strneq(s, "full ", 5))
                        dst = &p.full_usec;
                else
                        return -EBADMSG;
                for (t = s + 5; t < eol;) {
                        const char *sp = memchr(t, ' ', (size_t) (eol - t)) ?: eol;
                        if ((size_t) (sp - t) > 6 && strneq(t, "total=", 6)) {
                                char num[32];
                                size_t n = (size_t) (sp - t) - 6;
                                if (n >= sizeof num)
                                        return -EBADMSG;
                                memcpy(num, t + 6, n);
                                num[n] = 0;
                                if (safe_atou64(num, &v) < 0)
                                        return -EBADMSG;
                                total = true;
                        } else if (!memchr(t, '=', (size_t) (sp - t)))
                                return -EBADMSG;
                        t = sp < eol ? sp + 1 : eol;
                }
                if (!total)
                        return -EBADMSG;
                *dst = v;
                s = *eol ? eol + 1 : eol;
        }
        if (!have_some)
                return -EBADMSG;
        *ret = p;
        return 0;
}

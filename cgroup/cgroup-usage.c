/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>

#include "cgroup-usage.h"
#include "cgroup-util.h"
#include "fd-util.h"

/* Reads attr into a buffer; 0 with *ret = NULL when the file does not exist. */
static int read_optional(int cg_fd, const char *attr, char **ret) {
        int r = cg_read_attr(cg_fd, attr, ret);

        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int read_u64_optional(int cg_fd, const char *attr, uint64_t *ret, bool *ret_has) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = read_optional(cg_fd, attr, &s);
        if (r < 0)
                return r;
        *ret_has = s;
        if (!s)
                return 0;
        return cg_parse_u64_or_max(s, ret);
}

int cg_read_usage(int root_fd, const char *cgroup_path, CgroupUsage *ret) {
        _cleanup_(cgroup_usage_done) CgroupUsage u = {};
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *cpu = NULL, *mev = NULL, *io = NULL, *ev = NULL;
        int r;

        assert(ret);

        fd = cg_open(root_fd, cgroup_path);
        if (fd < 0)
                return fd;

        /* cpu.stat exists even without the cpu controller, but stay lenient: the root
         * cgroup of older kernels has none. */
        r = read_optional(fd, "cpu.stat", &cpu);
        if (r < 0)
                return r;
        if (cpu) {
                r = cg_parse_cpu_stat(cpu, &u.cpu);
                if (r < 0)
                        return r;
                u.has_cpu = true;
        }

        r = read_u64_optional(fd, "memory.current", &u.memory_current, &u.has_memory_current);
        if (r < 0)
                return r;
        r = read_u64_optional(fd, "memory.peak", &u.memory_peak, &u.has_memory_peak);
        if (r < 0)
                return r;
        r = read_optional(fd, "memory.events", &mev);
        if (r < 0)
                return r;
        if (mev) {
                r = cg_parse_memory_events(mev, &u.memory_events);
                if (r < 0)
                        return r;
                u.has_memory_events = true;
        }

        r = read_u64_optional(fd, "pids.current", &u.pids_current, &u.has_pids_current);
        if (r < 0)
                return r;
        r = read_u64_optional(fd, "pids.peak", &u.pids_peak, &u.has_pids_peak);
        if (r < 0)
                return r;

        r = read_optional(fd, "io.stat", &io);
        if (r < 0)
                return r;
        if (io) {
                r = cg_parse_io_stat(io, &u.io);
                if (r < 0)
                        return r;
                u.has_io = true;
        }

        r = read_optional(fd, "cgroup.events", &ev);
        if (r < 0)
                return r;
        if (ev) {
                r = cg_parse_events(ev, &u.events);
                if (r < 0)
                        return r;
                u.has_events = true;
        }

        {
                static const struct {
                        const char *file;
                        size_t has, value;
                } psi[] = {
                        { "cpu.pressure", offsetof(CgroupUsage, has_cpu_pressure), offsetof(CgroupUsage, cpu_pressure) },
                        { "memory.pressure", offsetof(CgroupUsage, has_memory_pressure),
                          offsetof(CgroupUsage, memory_pressure) },
                        { "io.pressure", offsetof(CgroupUsage, has_io_pressure), offsetof(CgroupUsage, io_pressure) },
                };
                for (size_t i = 0; i < ELEMENTSOF(psi); i++) {
                        _cleanup_free_ char *text = NULL;
                        r = read_optional(fd, psi[i].file, &text);
                        /* PSI off (psi=0) makes the files fail to read with EOPNOTSUPP. */
                        if (r == -EOPNOTSUPP)
                                continue;
                        if (r < 0)
                                return r;
                        if (!text)
                                continue;
                        r = cg_parse_pressure(text, (CgroupPressure *) ((char *) &u + psi[i].value));
                        if (r < 0)
                                return r;
                        *(bool *) ((char *) &u + psi[i].has) = true;
                }
        }

        *ret = u;
        u = (CgroupUsage) {};
        return 0;
}

void cgroup_usage_done(CgroupUsage *u) {
        if (!u)
                return;
        cgroup_io_stat_done(&u->io);
        u->has_io = false;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Keeps a project slice's cgroup controllers enabled between its jobs.
 *
 * systemd enables in a slice's cgroup.subtree_control the controllers that the slice's
 * loaded members ask for, and disables them once no member asks. A job's scope asks for
 * cpuset, memory, io and pids (its limits) and cpu (Delegate=yes). With one job at a time
 * in a project, each job's scope turned them on in corral-<project>.slice and
 * corral.slice and its end turned them off again; and turning a controller on waits for
 * the last scope's dying cgroups to be gone, which takes RCU grace periods. In the test
 * guest that was more than 100 ms of a 280 ms `corral submit --wait -- /bin/true`.
 *
 * So before the first scope of a project slice starts, a slice below it that asks for the
 * same controllers is started: corral-<project>-controllers.slice. It holds no process and
 * limits nothing (all CPUs, the default weight, accounting only); being a loaded member,
 * it keeps the controllers on. It is sent before the scope on the same bus, so systemd has
 * made it by the time it makes the scope. It outlives corrald (a restart finds it there:
 * UnitExists), and an admin may stop it: jobs then start as they did without it, until
 * corrald starts again. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpuset.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "log.h"
#include "properties.h"
#include "strv.h"
#include "unit-name.h"

/* Projects are the admin's (or the machine's groups): far fewer than this. Past it a slice
 * simply gets no hold. */
#define SLICE_HOLDS_MAX 1024U

/* Tried once per slice while corrald runs: a failure costs only speed, and must not cost
 * a failing call on every job. No userdata: the reply may come after the executor is gone. */
static int on_hold_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *err = sd_bus_message_get_error(m);

        if (err && !sd_bus_error_has_name(err, "org.freedesktop.systemd1.UnitExists"))
                log_debug("Cannot start a slice holding the cgroup controllers of jobs: %s",
                          err->message ?: err->name);
        return 0;
}

/* The CPUs the machine's root cgroup has: the hold must name some to ask for cpuset. */
static int root_cpus(Executor *e, CpuSet *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_file_at(e->cgroup_root_fd, "cpuset.cpus.effective", 64 * 1024, &text, NULL);
        if (r < 0)
                return r;
        text[strcspn(text, "\n")] = 0;
        r = cpu_set_parse(text, ret);
        if (r < 0)
                return r;
        return cpu_set_is_empty(ret) ? -ENODATA : 0;
}

int executor_hold_slice(Executor *e, const char *slice) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *name = NULL, *description = NULL;
        uint8_t mask[CPU_SET_MAX / 8];
        CpuSet cpus;
        size_t n;
        int r;

        if (!e->bus || strv_contains(e->held_slices, slice) || strv_length(e->held_slices) >= SLICE_HOLDS_MAX)
                return 0;
        r = unit_name_slice_hold(slice, &name);
        if (r == -EINVAL)
                return 0; /* corral.slice itself: its members are the project slices */
        if (r < 0)
                return r;
        if (asprintf(&description, "Keeps the cgroup controllers of %s enabled between jobs", slice) < 0)
                return -ENOMEM;

        r = exec_transient_unit_begin(e->bus, name, &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", description, "CPUWeight", "t",
                                  (uint64_t) 100, "IOAccounting", "b", 1, "MemoryAccounting", "b", 1,
                                  "TasksAccounting", "b", 1, "CollectMode", "s", "inactive-or-failed");
        if (r < 0)
                return r;
        if (root_cpus(e, &cpus) >= 0) {
                n = cpu_set_to_mask(&cpus, mask, sizeof mask);
                r = exec_property_append_bytes(m, "AllowedCPUs", mask, n);
                if (r < 0)
                        return r;
        }
        r = exec_transient_unit_send(e->bus, m, NULL, on_hold_reply, NULL);
        if (r < 0)
                return r;
        return strv_extend(&e->held_slices, slice);
}

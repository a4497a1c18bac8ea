/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Each project's [Slice] caps, set on corral-<project>.slice through systemd
 * (SetUnitProperties, runtime): the kernel enforces them on all the project's jobs
 * together, whatever the scheduler does, so no bug of ours can let a project take the
 * machine. Applied at start-up and on every reload; systemd keeps them for a slice that
 * has no job yet (a runtime drop-in), and `systemctl show` lists them. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "log.h"
#include "manager.h"
#include "project-slices.h"
#include "properties.h"
#include "unit-name.h"

static int on_set_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        char *slice = userdata;
        const sd_bus_error *e = sd_bus_message_get_error(reply);

        if (e)
                log_warning("Cannot set the caps of %s: %s", slice, e->message ?: e->name);
        else
                log_debug("Caps of %s set.", slice);
        free(slice);
        return 0;
}

static int append_u64(sd_bus_message *m, const char *name, uint64_t v) {
        return sd_bus_message_append(m, "(sv)", name, "t", v);
}

static int append_cpus(sd_bus_message *m, const CpuSet *s) {
        uint8_t bytes[CPU_SET_MAX / 8];
        size_t n = cpu_set_to_mask(s, bytes, sizeof bytes);

        return exec_property_append_bytes(m, "AllowedCPUs", bytes, n);
}

static int slice_set(Manager *m, const ProjectConfig *p) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *msg = NULL;
        _cleanup_free_ char *slice = NULL;
        const SliceConfig *s = &p->slice;
        int r;

        r = unit_name_project_slice(p->name, &slice);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(m->bus, &msg, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r < 0)
                return r;
        r = sd_bus_message_append(msg, "sb", slice, true);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(msg, 'a', "(sv)");
        if (r < 0)
                return r;
        /* Every cap, the ones not configured at systemd's defaults: a cap removed from the
         * file is lifted on the next reload. */
        if ((r = append_cpus(msg, s->have_allowed_cpus ? &s->allowed_cpus : &(CpuSet) {})) < 0 ||
            (r = append_u64(msg, "MemoryMax", s->memory_max ?: UINT64_MAX)) < 0 ||
            (r = append_u64(msg, "MemoryHigh", s->memory_high ?: UINT64_MAX)) < 0 ||
            (r = append_u64(msg, "CPUWeight", s->cpu_weight ?: 100)) < 0 ||
            (r = append_u64(msg, "IOWeight", s->io_weight ?: 100)) < 0 ||
            (r = append_u64(msg, "TasksMax", s->tasks_max ?: UINT64_MAX)) < 0)
                return r;
        r = sd_bus_message_close_container(msg);
        if (r < 0)
                return r;
        r = sd_bus_call_async(m->bus, NULL, msg, on_set_reply, slice, 0);
        if (r < 0)
                return r;
        TAKE_PTR(slice);
        return 0;
}

void manager_apply_slices(Manager *m, const Config *old) {
        if (!m->bus)
                return;
        /* A project that is gone leaves no caps behind on its slice. */
        for (size_t i = 0; old && i < old->n_projects; i++) {
                ProjectConfig gone = { .name = old->projects[i].name };
                int r;

                if (config_find_project(m->config, gone.name))
                        continue;
                r = slice_set(m, &gone);
                if (r < 0)
                        log_warning_errno(r, "Cannot lift the caps of former project %s's slice: %m", gone.name);
        }
        for (size_t i = 0; i < m->config->n_projects; i++) {
                const ProjectConfig *p = &m->config->projects[i];
                int r;

                r = slice_set(m, p);
                if (r < 0)
                        log_warning_errno(r, "Cannot set the caps of project %s's slice: %m", p->name);
        }
}

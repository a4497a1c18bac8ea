/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Each project's [Slice] caps, set on corral-<project>.slice by the executor
 * (executor_set_slice_caps()): the kernel enforces them on all the project's jobs
 * together, whatever the scheduler does, so no bug of ours can let a project take the
 * machine. Applied at start-up and on every reload. */

#include "log.h"
#include "manager.h"
#include "project-slices.h"

static void on_caps_set(const char *slice, int error, const char *message, void *userdata) {
        if (error < 0)
                log_warning("Cannot set the caps of %s: %s", slice, message);
        else
                log_debug("Caps of %s set.", slice);
}

/* The caps a project's [Slice] asks for; one it does not name goes back to systemd's
 * default, so a cap removed from the file is lifted on the next reload. */
static int slice_set(Manager *m, const ProjectConfig *p) {
        const SliceConfig *s = &p->slice;

        return executor_set_slice_caps(m->bus, p->name,
                                       &(ExecutorSliceCaps) {
                                               .allowed_cpus = s->have_allowed_cpus ? &s->allowed_cpus : NULL,
                                               .memory_max = s->memory_max,
                                               .memory_high = s->memory_high,
                                               .cpu_weight = s->cpu_weight,
                                               .io_weight = s->io_weight,
                                               .tasks_max = s->tasks_max,
                                       },
                                       on_caps_set, NULL);
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

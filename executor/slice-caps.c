/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A project slice's caps, set on corral-<project>.slice through systemd
 * (SetUnitProperties, runtime): the kernel enforces them on all the project's jobs
 * together. systemd keeps them for a slice that has no job yet (a runtime drop-in), and
 * `systemctl show` lists them. Every cap is sent, the ones not given at systemd's
 * defaults, so that a cap given before and not now is lifted. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "executor.h"
#include "properties.h"
#include "unit-name.h"

typedef struct SliceCapsCall {
        char *slice;
        executor_slice_caps_done_t done;
        void *userdata;
} SliceCapsCall;

static void slice_caps_call_free(void *p) {
        SliceCapsCall *c = p;

        if (!c)
                return;
        free(c->slice);
        free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC_VOID(SliceCapsCall *, slice_caps_call_free);

static int append_u64(sd_bus_message *m, const char *name, uint64_t v) {
        return sd_bus_message_append(m, "(sv)", name, "t", v);
}

static int append_cpus(sd_bus_message *m, const CpuSet *s) {
        uint8_t bytes[CPU_SET_MAX / 8];
        size_t n = s ? cpu_set_to_mask(s, bytes, sizeof bytes) : 0;

        return exec_property_append_bytes(m, "AllowedCPUs", bytes, n);
}

int executor_slice_caps_message(sd_bus *bus, const char *project, const ExecutorSliceCaps *caps,
                                sd_bus_message **ret, char **ret_slice) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *slice = NULL;
        int r;

        r = unit_name_project_slice(project, &slice);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "SetUnitProperties");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "sb", slice, true);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        if ((r = append_cpus(m, caps->allowed_cpus)) < 0 ||
            (r = append_u64(m, "MemoryMax", caps->memory_max ?: UINT64_MAX)) < 0 ||
            (r = append_u64(m, "MemoryHigh", caps->memory_high ?: UINT64_MAX)) < 0 ||
            (r = append_u64(m, "CPUWeight", caps->cpu_weight ?: 100)) < 0 ||
            (r = append_u64(m, "IOWeight", caps->io_weight ?: 100)) < 0 ||
            (r = append_u64(m, "TasksMax", caps->tasks_max ?: UINT64_MAX)) < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        if (ret_slice)
                *ret_slice = TAKE_PTR(slice);
        return 0;
}

static int on_caps_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        SliceCapsCall *c = userdata;
        const sd_bus_error *err = sd_bus_message_get_error(reply);

        if (!c->done)
                return 0;
        if (err)
                c->done(c->slice, -sd_bus_message_get_errno(reply) ?: -EIO, err->message ?: err->name, c->userdata);
        else
                c->done(c->slice, 0, NULL, c->userdata);
        return 0;
}

int executor_set_slice_caps(sd_bus *bus, const char *project, const ExecutorSliceCaps *caps,
                            executor_slice_caps_done_t done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_(slice_caps_call_freep) SliceCapsCall *c = NULL;
        int r;

        if (!bus)
                return -ENOTCONN;
        c = calloc(1, sizeof *c);
        if (!c)
                return -ENOMEM;
        c->done = done;
        c->userdata = userdata;
        r = executor_slice_caps_message(bus, project, caps, &m, &c->slice);
        if (r < 0)
                return r;
        r = sd_bus_call_async(bus, &slot, m, on_caps_reply, c, 0);
        if (r < 0)
                return r;
        /* The bus owns the call from here: c goes with the slot, once the reply has come
         * or the bus is gone, whoever called is no longer asked. */
        r = sd_bus_slot_set_destroy_callback(slot, slice_caps_call_free);
        if (r < 0)
                return r;
        TAKE_PTR(c);
        r = sd_bus_slot_set_floating(slot, 1);
        if (r < 0)
                return r;
        return 0;
}

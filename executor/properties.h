/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "job-spec.h"
#include "macro.h"

/* The transient-unit properties of a job's scope, as plain data: built from a JobSpec by
 * a pure function (table-testable without a bus), then appended to a StartTransientUnit
 * call. Every property here exists for scopes in systemd >= 244 unless noted. */

typedef enum ExecPropertyType {
        EXEC_PROPERTY_BOOL,      /* "b" */
        EXEC_PROPERTY_U64,       /* "t" */
        EXEC_PROPERTY_STRING,    /* "s" */
        EXEC_PROPERTY_BYTES,     /* "ay" */
        EXEC_PROPERTY_IO_LIMITS, /* "a(st)" */
        EXEC_PROPERTY_DEVICE_ALLOW, /* "a(ss)": DeviceAllow= entries, each with "rwm" */
        _EXEC_PROPERTY_TYPE_MAX,
} ExecPropertyType;

typedef struct ExecIoLimit {
        char *device; /* a path: "MAJ:MIN" from the spec arrives as "/dev/block/MAJ:MIN" */
        uint64_t value;
} ExecIoLimit;

typedef struct ExecProperty {
        const char *name; /* static storage */
        ExecPropertyType type;
        union {
                bool boolean;
                uint64_t u64;
                char *string;
                struct {
                        uint8_t *data;
                        size_t size;
                } bytes;
                struct {
                        ExecIoLimit *items;
                        size_t n;
                } io;
                char **strv;
        };
} ExecProperty;

typedef struct ExecProperties {
        ExecProperty *items;
        size_t n, allocated;
} ExecProperties;

/* The systemd version that added OOMPolicy= for scopes; older managers reject the unknown
 * property and with it the whole unit, and do not stop scopes on OOM anyway. */
#define EXEC_SYSTEMD_OOMPOLICY_SCOPE 253

/* TasksMax= of a job that asks for no limit of its own: a fork bomb then stops at its own
 * scope's limit instead of at the machine's (systemd's DefaultTasksMax= is a share of the
 * whole pid space, tens of thousands of tasks on a big machine). Generous for real work,
 * threads included: EXEC_TASKS_MAX_PER_CPU per allocated CPU, at least
 * EXEC_TASKS_MAX_FLOOR. */
#define EXEC_TASKS_MAX_FLOOR UINT64_C(4096)
#define EXEC_TASKS_MAX_PER_CPU UINT64_C(512)
uint64_t exec_tasks_max_default(const CpuSet *cpus) _pure_;

/* Builds the ordered property list for spec. systemd_version is the manager's version
 * (the Version property of org.freedesktop.systemd1.Manager, as a number), 0 for "recent".
 * Fails with -EINVAL for an empty CPU set or an I/O limit whose device is neither an
 * absolute path nor "MAJ:MIN", -ERANGE for an I/O weight outside 1..10000. */
int exec_properties_build(const JobSpec *spec, unsigned systemd_version, ExecProperties **ret);

ExecProperties *exec_properties_free(ExecProperties *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(ExecProperties *, exec_properties_free);
#define _cleanup_exec_properties_free_ _cleanup_(exec_properties_freep)

/* The property called name, or NULL. */
const ExecProperty *exec_properties_get(const ExecProperties *p, const char *name) _pure_;

/* The D-Bus signature of a property's value ("b", "t", "s", "ay", "a(st)"). */
const char *exec_property_signature(ExecPropertyType t) _const_;

/* Appends one "(sv)" element whose value is a byte array ("ay"): a CPU mask
 * (AllowedCPUs=), StandardInputData=. Also for the daemon's slice caps and job mail. */
int exec_property_append_bytes(sd_bus_message *m, const char *name, const void *data, size_t size);

/* StartTransientUnit(name, "fail", properties, aux) in two halves: the first makes the
 * message and opens its properties' "a(sv)", which the caller fills; the second closes it,
 * adds no aux units and calls asynchronously (slot: NULL for a floating call). */
int exec_transient_unit_begin(sd_bus *bus, const char *name, sd_bus_message **ret);
int exec_transient_unit_send(sd_bus *bus, sd_bus_message *m, sd_bus_slot **slot, sd_bus_message_handler_t callback,
                             void *userdata);

/* Appends each property as one "(sv)" element to m, which the caller has opened an
 * "a(sv)" container on (so it can add PIDs/PIDFDs of its own to the same array). */
int exec_properties_append(const ExecProperties *p, sd_bus_message *m);

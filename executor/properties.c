/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "properties.h"
#include "strv.h"
#include "unit-name.h"

/* systemd's CGROUP_WEIGHT_MIN/MAX, which is also what the kernel's io.weight accepts. */
#define IO_WEIGHT_MIN UINT64_C(1)
#define IO_WEIGHT_MAX UINT64_C(10000)

static void property_done(ExecProperty *p) {
        switch (p->type) {
        case EXEC_PROPERTY_STRING:
                free(p->string);
                break;
        case EXEC_PROPERTY_BYTES:
                free(p->bytes.data);
                break;
        case EXEC_PROPERTY_IO_LIMITS:
                for (size_t i = 0; i < p->io.n; i++)
                        free(p->io.items[i].device);
                free(p->io.items);
                break;
        case EXEC_PROPERTY_DEVICE_ALLOW:
                strv_free(p->strv);
                break;
        default:
                break;
        }
}

ExecProperties *exec_properties_free(ExecProperties *p) {
        if (!p)
                return NULL;
        for (size_t i = 0; i < p->n; i++)
                property_done(&p->items[i]);
        free(p->items);
        free(p);
        return NULL;
}

/* Takes ownership of the value in prop even on failure. */
static int push(ExecProperties *p, ExecProperty prop) {
        if (!GREEDY_REALLOC(p->items, p->allocated, p->n + 1)) {
                property_done(&prop);
                return -ENOMEM;
        }
        p->items[p->n++] = prop;
        return 0;
}

static int push_bool(ExecProperties *p, const char *name, bool b) {
        return push(p, (ExecProperty) { .name = name, .type = EXEC_PROPERTY_BOOL, .boolean = b });
}

static int push_u64(ExecProperties *p, const char *name, uint64_t v) {
        return push(p, (ExecProperty) { .name = name, .type = EXEC_PROPERTY_U64, .u64 = v });
}

/* Takes ownership of s. */
static int push_string_take(ExecProperties *p, const char *name, char *s) {
        if (!s)
                return -ENOMEM;
        return push(p, (ExecProperty) { .name = name, .type = EXEC_PROPERTY_STRING, .string = s });
}

static int push_string(ExecProperties *p, const char *name, const char *s) {
        return push_string_take(p, name, strdup(s));
}

static int push_mask(ExecProperties *p, const char *name, const CpuSet *set) {
        uint8_t buf[CPU_SET_MAX / 8];
        size_t n;
        uint8_t *data;

        n = cpu_set_to_mask(set, buf, sizeof buf);
        data = malloc(n ?: 1);
        if (!data)
                return -ENOMEM;
        memcpy(data, buf, n);
        return push(p, (ExecProperty) {
                .name = name,
                .type = EXEC_PROPERTY_BYTES,
                .bytes = { .data = data, .size = n },
        });
}

static bool is_maj_min(const char *s) {
        size_t a = strspn(s, "0123456789"), b;

        if (a == 0 || s[a] != ':')
                return false;
        b = strspn(s + a + 1, "0123456789");
        return b > 0 && s[a + 1 + b] == 0;
}

/* systemd resolves /dev/block/MAJ:MIN from the numbers alone without touching the disk,
 * while a bare "MAJ:MIN" would be taken for a relative path and silently skipped. */
static int io_device_path(const char *device, char **ret) {
        if (isempty(device))
                return -EINVAL;
        if (device[0] == '/')
                *ret = strdup(device);
        else if (is_maj_min(device)) {
                if (asprintf(ret, "/dev/block/%s", device) < 0)
                        *ret = NULL;
        } else
                return -EINVAL;
        return *ret ? 0 : -ENOMEM;
}

/* One a(st) property from one field of every JobIoLimit; skipped when no device has a
 * limit in that field. */
static int push_io_limits(ExecProperties *p, const char *name, const JobSpec *spec, size_t field_offset) {
        ExecIoLimit *items;
        size_t n = 0;
        int r;

        items = new0(ExecIoLimit, spec->n_io_limits);
        if (!items)
                return -ENOMEM;
        for (size_t i = 0; i < spec->n_io_limits; i++) {
                uint64_t v;

                memcpy(&v, (const uint8_t *) &spec->io_limits[i] + field_offset, sizeof v);
                if (v == 0)
                        continue;
                r = io_device_path(spec->io_limits[i].device, &items[n].device);
                if (r < 0) {
                        ExecProperty tmp = { .type = EXEC_PROPERTY_IO_LIMITS, .io = { items, n } };
                        property_done(&tmp);
                        return r;
                }
                items[n++].value = v;
        }
        if (n == 0) {
                free(items);
                return 0;
        }
        return push(p, (ExecProperty) {
                .name = name,
                .type = EXEC_PROPERTY_IO_LIMITS,
                .io = { .items = items, .n = n },
        });
}

/* What systemd's DeviceAllow= takes: a node below /dev, or a driver by "char-"/"block-" name. */
static bool device_allow_is_valid(const char *e) {
        return (strneq(e, "/dev/", 5) && e[5]) || (strneq(e, "char-", 5) && e[5]) || (strneq(e, "block-", 6) && e[6]);
}

static int validate(const JobSpec *spec) {
        STRV_FOREACH(e, spec->device_allow)
                if (!device_allow_is_valid(*e))
                        return -EINVAL;
        if (cpu_set_is_empty(&spec->cpus))
                return -EINVAL;
        if (spec->io_weight != 0 && (spec->io_weight < IO_WEIGHT_MIN || spec->io_weight > IO_WEIGHT_MAX))
                return -ERANGE;
        /* Every device, also those with only zero limits, so a typo is caught early. */
        for (size_t i = 0; i < spec->n_io_limits; i++) {
                const char *d = spec->io_limits[i].device;

                if (isempty(d) || !(d[0] == '/' || is_maj_min(d)))
                        return -EINVAL;
        }
        return 0;
}

static char *description(const JobSpec *spec) {
        char user[32], *s;
        const char *u = spec->user;
        int k;

        if (isempty(u)) {
                (void) snprintf(user, sizeof user, "uid %u", (unsigned) spec->uid);
                u = user;
        }
        if (isempty(spec->name))
                k = asprintf(&s, "Corral job %" PRIu64 " of %s", spec->id, u);
        else
                k = asprintf(&s, "Corral job %" PRIu64 " (%s) of %s", spec->id, spec->name, u);
        return k < 0 ? NULL : s;
}

uint64_t exec_tasks_max_default(const CpuSet *cpus) {
        return MAX(EXEC_TASKS_MAX_FLOOR, EXEC_TASKS_MAX_PER_CPU * cpu_set_count(cpus));
}

int exec_properties_build(const JobSpec *spec, unsigned systemd_version, ExecProperties **ret) {
        _cleanup_exec_properties_free_ ExecProperties *p = NULL;
        char *slice = NULL;
        int r;

        assert(spec);
        assert(ret);

        r = validate(spec);
        if (r < 0)
                return r;

        p = new0(ExecProperties, 1);
        if (!p)
                return -ENOMEM;

        /* corral-<project>.slice nests below corral.slice by systemd's dash rule. */
        if (isempty(spec->project))
                slice = strdup("corral.slice");
        else {
                r = unit_name_project_slice(spec->project, &slice);
                if (r < 0)
                        return r;
        }
        r = push_string_take(p, "Slice", slice);
        if (r < 0)
                return r;
        r = push_string_take(p, "Description", description(spec));
        if (r < 0)
                return r;
        /* A failed scope (say, after an OOM kill) would otherwise stay loaded until
         * reset-failed, and its name with it: a requeued job could not start again. */
        r = push_string(p, "CollectMode", "inactive-or-failed");
        if (r < 0)
                return r;
        /* Delegated so the supervisor can keep itself in the scope's root and the job in the
         * leaf <scope>/job: cancel and cleanup then kill the job's processes only, and the
         * supervisor lives to record the outcome. */
        r = push_bool(p, "Delegate", true);
        if (r < 0)
                return r;
        if (systemd_version == 0 || systemd_version >= EXEC_SYSTEMD_OOMPOLICY_SCOPE) {
                /* The default ("stop") would stop the scope, and with it our supervisor,
                 * when the kernel OOM-kills one of the job's processes; the supervisor
                 * records the OOM kill and ends the job itself. */
                r = push_string(p, "OOMPolicy", "continue");
                if (r < 0)
                        return r;
        }

        static const char *const accounting[] = { "CPUAccounting", "MemoryAccounting", "IOAccounting",
                                                  "TasksAccounting" };
        for (size_t i = 0; i < ELEMENTSOF(accounting); i++) {
                r = push_bool(p, accounting[i], true);
                if (r < 0)
                        return r;
        }

        r = push_mask(p, "AllowedCPUs", &spec->cpus);
        if (r < 0)
                return r;
        /* Not AllowedMemoryNodes=: the supervisor binds the job's leaf to spec->mem_nodes
         * (bind_leaf_mems()), so that joining the scope moves none of its pages. */

        if (spec->memory_max > 0) {
                r = push_u64(p, "MemoryMax", spec->memory_max);
                if (r < 0)
                        return r;
                /* Otherwise the limit only moves the excess to swap and slows the node. */
                r = push_u64(p, "MemorySwapMax", 0);
                if (r < 0)
                        return r;
        }

        if (spec->io_weight > 0) {
                r = push_u64(p, "IOWeight", spec->io_weight);
                if (r < 0)
                        return r;
        }
        static const struct {
                const char *name;
                size_t offset;
        } io_limits[] = {
                { "IOReadBandwidthMax", offsetof(JobIoLimit, read_bps) },
                { "IOWriteBandwidthMax", offsetof(JobIoLimit, write_bps) },
                { "IOReadIOPSMax", offsetof(JobIoLimit, read_iops) },
                { "IOWriteIOPSMax", offsetof(JobIoLimit, write_iops) },
        };
        for (size_t i = 0; i < ELEMENTSOF(io_limits); i++) {
                r = push_io_limits(p, io_limits[i].name, spec, io_limits[i].offset);
                if (r < 0)
                        return r;
        }

        /* The device fence: "closed" lets in the pseudo devices (/dev/null, /dev/zero, /dev/full,
         * /dev/random, /dev/urandom, /dev/tty, /dev/ptmx) whatever the list says; the list is
         * every other driver but the GPUs' and the job's own GPU nodes (devices.h). Allowed
         * with "rwm" as without a policy: mknod still needs CAP_MKNOD. */
        if (spec->device_fence) {
                char **copy = strv_copy(spec->device_allow);

                r = push_string(p, "DevicePolicy", "closed");
                if (r < 0) {
                        strv_free(copy);
                        return r;
                }
                if (!copy && !(copy = new0(char *, 1)))
                        return -ENOMEM;
                r = push(p, (ExecProperty) { .name = "DeviceAllow", .type = EXEC_PROPERTY_DEVICE_ALLOW, .strv = copy });
                if (r < 0)
                        return r;
        }

        /* Always set: without it the scope would get systemd's DefaultTasksMax=. UINT64_MAX
         * is what systemd takes for "infinity". */
        r = push_u64(p, "TasksMax",
                     spec->tasks_max > 0 ? spec->tasks_max : exec_tasks_max_default(&spec->cpus));
        if (r < 0)
                return r;

        *ret = TAKE_PTR(p);
        return 0;
}

const ExecProperty *exec_properties_get(const ExecProperties *p, const char *name) {
        for (size_t i = 0; p && i < p->n; i++)
                if (streq(p->items[i].name, name))
                        return &p->items[i];
        return NULL;
}

const char *exec_property_signature(ExecPropertyType t) {
        static const char *const table[_EXEC_PROPERTY_TYPE_MAX] = {
                [EXEC_PROPERTY_BOOL] = "b",
                [EXEC_PROPERTY_U64] = "t",
                [EXEC_PROPERTY_STRING] = "s",
                [EXEC_PROPERTY_BYTES] = "ay",
                [EXEC_PROPERTY_IO_LIMITS] = "a(st)",
                [EXEC_PROPERTY_DEVICE_ALLOW] = "a(ss)",
        };

        return (unsigned) t < _EXEC_PROPERTY_TYPE_MAX ? table[t] : NULL;
}

/* Opens the "(sv)" element of a property called name and, in it, its value's variant of
 * signature sig, for the caller to fill; property_close() closes both. */
static int property_open(sd_bus_message *m, const char *name, const char *sig) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append_basic(m, 's', name);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'v', sig);
}

static int property_close(sd_bus_message *m) {
        int r;

        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

int exec_property_append_bytes(sd_bus_message *m, const char *name, const void *data, size_t size) {
        int r;

        r = property_open(m, name, "ay");
        if (r < 0)
                return r;
        r = sd_bus_message_append_array(m, 'y', data, size);
        if (r < 0)
                return r;
        return property_close(m);
}

static int append_one(const ExecProperty *prop, sd_bus_message *m) {
        int r;

        switch (prop->type) {
        case EXEC_PROPERTY_BOOL:
                return sd_bus_message_append(m, "(sv)", prop->name, "b", (int) prop->boolean);
        case EXEC_PROPERTY_U64:
                return sd_bus_message_append(m, "(sv)", prop->name, "t", prop->u64);
        case EXEC_PROPERTY_STRING:
                return sd_bus_message_append(m, "(sv)", prop->name, "s", prop->string);
        case EXEC_PROPERTY_BYTES:
                return exec_property_append_bytes(m, prop->name, prop->bytes.data, prop->bytes.size);
        case EXEC_PROPERTY_IO_LIMITS:
                r = property_open(m, prop->name, "a(st)");
                if (r < 0)
                        return r;
                r = sd_bus_message_open_container(m, 'a', "(st)");
                if (r < 0)
                        return r;
                for (size_t i = 0; i < prop->io.n; i++) {
                        const ExecIoLimit *l = &prop->io.items[i];

                        r = sd_bus_message_append(m, "(st)", l->device, l->value);
                        if (r < 0)
                                return r;
                }
                r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
                return property_close(m);
        case EXEC_PROPERTY_DEVICE_ALLOW:
                r = property_open(m, prop->name, "a(ss)");
                if (r < 0)
                        return r;
                r = sd_bus_message_open_container(m, 'a', "(ss)");
                if (r < 0)
                        return r;
                STRV_FOREACH(d, prop->strv) {
                        r = sd_bus_message_append(m, "(ss)", *d, "rwm");
                        if (r < 0)
                                return r;
                }
                r = sd_bus_message_close_container(m);
                if (r < 0)
                        return r;
                return property_close(m);
        default:
                return -EINVAL;
        }
}

int exec_properties_append(const ExecProperties *p, sd_bus_message *m) {
        int r;

        assert(p);
        assert(m);

        for (size_t i = 0; i < p->n; i++) {
                r = append_one(&p->items[i], m);
                if (r < 0)
                        return r;
        }
        return 0;
}

int exec_transient_unit_begin(sd_bus *bus, const char *name, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                           "org.freedesktop.systemd1.Manager", "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", name, "fail");
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

int exec_transient_unit_send(sd_bus *bus, sd_bus_message *m, sd_bus_slot **slot, sd_bus_message_handler_t callback,
                             void *userdata) {
        int r;

        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        return sd_bus_call_async(bus, slot, m, callback, userdata, 0);
}

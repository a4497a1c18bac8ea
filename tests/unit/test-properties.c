/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "executor/properties.h"
#include "strv.h"

typedef struct IoCase {
        const char *device;
        uint64_t rbps, wbps, riops, wiops;
} IoCase;

typedef struct Case {
        const char *what;
        /* input */
        uint64_t id;
        const char *name, *user, *project, *cpus, *mem_nodes;
        uint64_t memory_max, io_weight, tasks_max;
        IoCase io[3];
        unsigned systemd_version;
        /* output: -errno, or 0 and the properties as "Name=value" in order */
        int r;
        const char *props[24];
} Case;

#define COMMON_HEAD(slice, desc)                                                           \
        "Slice=" slice, "Description=" desc, "CollectMode=inactive-or-failed", "Delegate=yes"
#define ACCOUNTING "CPUAccounting=yes", "MemoryAccounting=yes", "IOAccounting=yes", "TasksAccounting=yes"

static const Case cases[] = {
        {
                .what = "minimal",
                .id = 1, .name = "sim", .user = "alice", .cpus = "0-3",
                .props = { COMMON_HEAD("corral.slice", "Corral job 1 (sim) of alice"),
                           "OOMPolicy=continue", ACCOUNTING, "AllowedCPUs=0f", "TasksMax=4096" },
        },
        {
                .what = "everything",
                .id = 42, .name = "fold", .user = "bob", .project = "bio-chem",
                .cpus = "0,9", .mem_nodes = "1", .memory_max = 1 << 30, .io_weight = 500,
                .tasks_max = 512,
                .io = { { "/dev/nvme0n1", 100, 200, 0, 40 }, { "8:16", 0, 300, 10, 0 } },
                .props = { COMMON_HEAD("corral-bio\\x2dchem.slice", "Corral job 42 (fold) of bob"),
                           "OOMPolicy=continue", ACCOUNTING,
                           "AllowedCPUs=0102",
                           "MemoryMax=1073741824", "MemorySwapMax=0", "IOWeight=500",
                           "IOReadBandwidthMax=/dev/nvme0n1:100",
                           "IOWriteBandwidthMax=/dev/nvme0n1:200,/dev/block/8:16:300",
                           "IOReadIOPSMax=/dev/block/8:16:10",
                           "IOWriteIOPSMax=/dev/nvme0n1:40",
                           "TasksMax=512" },
        },
        {
                .what = "systemd 252 has no OOMPolicy for scopes",
                .id = 2, .user = "carol", .cpus = "5", .systemd_version = 252,
                .props = { COMMON_HEAD("corral.slice", "Corral job 2 of carol"),
                           ACCOUNTING, "AllowedCPUs=20", "TasksMax=4096" },
        },
        {
                .what = "systemd 253 has",
                .id = 2, .user = "carol", .cpus = "5", .systemd_version = 253,
                .props = { COMMON_HEAD("corral.slice", "Corral job 2 of carol"),
                           "OOMPolicy=continue", ACCOUNTING, "AllowedCPUs=20", "TasksMax=4096" },
        },
        {
                .what = "io limit entry with only zeros, weight bounds, CPU past the first word",
                .id = 3, .user = "dave", .project = "x", .cpus = "64", .io_weight = 10000,
                .io = { { "/dev/sda", 0, 0, 0, 0 } },
                .props = { COMMON_HEAD("corral-x.slice", "Corral job 3 of dave"),
                           "OOMPolicy=continue", ACCOUNTING,
                           "AllowedCPUs=000000000000000001",
                           "IOWeight=10000", "TasksMax=4096" },
        },
        {
                .what = "no tasks limit asked for: the default grows with the CPUs",
                .id = 10, .user = "f", .cpus = "0-15",
                .props = { COMMON_HEAD("corral.slice", "Corral job 10 of f"),
                           "OOMPolicy=continue", ACCOUNTING, "AllowedCPUs=ffff", "TasksMax=8192" },
        },
        {
                .what = "tasks limit lifted on purpose",
                .id = 11, .user = "f", .cpus = "0", .tasks_max = UINT64_MAX,
                .props = { COMMON_HEAD("corral.slice", "Corral job 11 of f"),
                           "OOMPolicy=continue", ACCOUNTING, "AllowedCPUs=01",
                           "TasksMax=18446744073709551615" },
        },
        { .what = "empty cpuset", .id = 4, .user = "e", .cpus = "", .r = -EINVAL },
        { .what = "io weight 0 is unset, 10001 too big", .id = 5, .user = "e", .cpus = "0",
          .io_weight = 10001, .r = -ERANGE },
        { .what = "relative device", .id = 6, .user = "e", .cpus = "0",
          .io = { { "sda", 1, 0, 0, 0 } }, .r = -EINVAL },
        { .what = "bad MAJ:MIN", .id = 7, .user = "e", .cpus = "0",
          .io = { { "8:", 1, 0, 0, 0 } }, .r = -EINVAL },
        { .what = "bad device even with zero limits", .id = 8, .user = "e", .cpus = "0",
          .io = { { "", 0, 0, 0, 0 } }, .r = -EINVAL },
        { .what = "MAJ:MIN with junk", .id = 9, .user = "e", .cpus = "0",
          .io = { { "8:16x", 0, 1, 0, 0 } }, .r = -EINVAL },
};

static JobSpec *make_spec(const Case *c) {
        JobSpec *s = calloc(1, sizeof *s);

        assert_non_null(s);
        s->id = c->id;
        s->name = c->name ? strdup(c->name) : NULL;
        s->user = c->user ? strdup(c->user) : NULL;
        s->project = c->project ? strdup(c->project) : NULL;
        assert_int_equal(cpu_set_parse(c->cpus, &s->cpus), 0);
        assert_int_equal(cpu_set_parse(c->mem_nodes ?: "", &s->mem_nodes), 0);
        s->memory_max = c->memory_max;
        s->io_weight = c->io_weight;
        s->tasks_max = c->tasks_max;
        for (size_t i = 0; i < ELEMENTSOF(c->io) && c->io[i].device; i++) {
                s->io_limits = reallocarray(s->io_limits, i + 1, sizeof(JobIoLimit));
                assert_non_null(s->io_limits);
                s->io_limits[i] = (JobIoLimit) {
                        .device = strdup(c->io[i].device),
                        .read_bps = c->io[i].rbps,
                        .write_bps = c->io[i].wbps,
                        .read_iops = c->io[i].riops,
                        .write_iops = c->io[i].wiops,
                };
                s->n_io_limits = i + 1;
        }
        return s;
}

static char *render(const ExecProperty *p) {
        char *buf = malloc(4096);
        size_t n;

        assert_non_null(buf);
        n = (size_t) snprintf(buf, 4096, "%s=", p->name);
        switch (p->type) {
        case EXEC_PROPERTY_BOOL:
                n += (size_t) snprintf(buf + n, 4096 - n, "%s", yes_no(p->boolean));
                break;
        case EXEC_PROPERTY_U64:
                n += (size_t) snprintf(buf + n, 4096 - n, "%" PRIu64, p->u64);
                break;
        case EXEC_PROPERTY_STRING:
                n += (size_t) snprintf(buf + n, 4096 - n, "%s", p->string);
                break;
        case EXEC_PROPERTY_BYTES:
                for (size_t i = 0; i < p->bytes.size; i++)
                        n += (size_t) snprintf(buf + n, 4096 - n, "%02x", p->bytes.data[i]);
                break;
        case EXEC_PROPERTY_IO_LIMITS:
                for (size_t i = 0; i < p->io.n; i++)
                        n += (size_t) snprintf(buf + n, 4096 - n, "%s%s:%" PRIu64, i ? "," : "",
                                               p->io.items[i].device, p->io.items[i].value);
                break;
        default:
                fail_msg("bad type %d", p->type);
        }
        return buf;
}

static void test_table(void **state) {
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const Case *c = &cases[i];
                _cleanup_job_spec_free_ JobSpec *spec = make_spec(c);
                _cleanup_exec_properties_free_ ExecProperties *p = NULL;
                size_t n_want = 0;
                int r;

                r = exec_properties_build(spec, c->systemd_version, &p);
                if (r != c->r)
                        fail_msg("%s: exec_properties_build() = %d, want %d", c->what, r, c->r);
                if (r < 0) {
                        assert_null(p);
                        continue;
                }
                while (c->props[n_want])
                        n_want++;
                for (size_t j = 0; j < MAX(p->n, n_want); j++) {
                        _cleanup_free_ char *got = j < p->n ? render(&p->items[j]) : NULL;
                        const char *want = j < n_want ? c->props[j] : NULL;

                        if (!got || !want || strcmp(got, want) != 0)
                                fail_msg("%s: property %zu is \"%s\", want \"%s\"", c->what, j,
                                         got ?: "(none)", want ?: "(none)");
                }
        }
}

static void test_get_and_signature(void **state) {
        _cleanup_job_spec_free_ JobSpec *spec = make_spec(&cases[1]);
        _cleanup_exec_properties_free_ ExecProperties *p = NULL;
        const ExecProperty *x;

        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        x = exec_properties_get(p, "TasksMax");
        assert_non_null(x);
        assert_int_equal(x->u64, 512);
        assert_null(exec_properties_get(p, "CPUQuota"));
        p = exec_properties_free(p);

        /* The highest CPU: a 128-byte mask with only the top bit set. */
        assert_int_equal(cpu_set_parse("1023", &spec->cpus), 0);
        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        x = exec_properties_get(p, "AllowedCPUs");
        assert_non_null(x);
        assert_int_equal(x->type, EXEC_PROPERTY_BYTES);
        assert_int_equal(x->bytes.size, 128);
        assert_int_equal(x->bytes.data[127], 0x80);
        assert_int_equal(x->bytes.data[0], 0);

        assert_string_equal(exec_property_signature(EXEC_PROPERTY_BOOL), "b");
        assert_string_equal(exec_property_signature(EXEC_PROPERTY_U64), "t");
        assert_string_equal(exec_property_signature(EXEC_PROPERTY_STRING), "s");
        assert_string_equal(exec_property_signature(EXEC_PROPERTY_BYTES), "ay");
        assert_string_equal(exec_property_signature(EXEC_PROPERTY_IO_LIMITS), "a(st)");
        assert_null(exec_property_signature(_EXEC_PROPERTY_TYPE_MAX));
}

/* Builds a real StartTransientUnit message without a bus daemon: a bus object over one
 * end of a socketpair is enough for sd-bus to create and seal messages. */
/* The device fence: DevicePolicy=closed and the spec's list, in order; no fence, neither
 * property (a machine without GPUs keeps systemd's default, every device). */
static void test_device_fence(void **state) {
        _cleanup_job_spec_free_ JobSpec *spec = make_spec(&cases[1]);
        _cleanup_exec_properties_free_ ExecProperties *p = NULL;
        const ExecProperty *x;

        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        assert_null(exec_properties_get(p, "DevicePolicy"));
        assert_null(exec_properties_get(p, "DeviceAllow"));
        p = exec_properties_free(p);

        spec->device_fence = true;
        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        assert_string_equal(exec_properties_get(p, "DevicePolicy")->string, "closed");
        x = exec_properties_get(p, "DeviceAllow");
        assert_non_null(x);
        assert_int_equal(x->type, EXEC_PROPERTY_DEVICE_ALLOW);
        assert_int_equal(strv_length(x->strv), 0); /* a CPU job on a machine with no driver list */
        p = exec_properties_free(p);

        assert_int_equal(strv_extend(&spec->device_allow, "char-pts"), 0);
        assert_int_equal(strv_extend(&spec->device_allow, "block-sd"), 0);
        assert_int_equal(strv_extend(&spec->device_allow, "/dev/nvidia1"), 0);
        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        x = exec_properties_get(p, "DeviceAllow");
        assert_int_equal(strv_length(x->strv), 3);
        assert_string_equal(x->strv[2], "/dev/nvidia1");
        assert_string_equal(exec_property_signature(EXEC_PROPERTY_DEVICE_ALLOW), "a(ss)");
        p = exec_properties_free(p);

        /* What systemd would refuse, and with it the whole unit: refused here. */
        assert_int_equal(strv_extend(&spec->device_allow, "nvidia0"), 0);
        assert_int_equal(exec_properties_build(spec, 0, &p), -EINVAL);
}

static void test_bus_append(void **state) {
        _cleanup_job_spec_free_ JobSpec *spec = make_spec(&cases[1]);
        _cleanup_exec_properties_free_ ExecProperties *p = NULL;
        sd_bus *bus = NULL;
        sd_bus_message *m = NULL;
        const char *name, *mode;
        size_t i = 0;
        int pair[2];

        spec->device_fence = true;
        assert_int_equal(strv_extend(&spec->device_allow, "char-pts"), 0);
        assert_int_equal(strv_extend(&spec->device_allow, "/dev/nvidia1"), 0);
        assert_int_equal(exec_properties_build(spec, 0, &p), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        assert_int_equal(sd_bus_new(&bus), 0);
        assert_int_equal(sd_bus_set_fd(bus, pair[0], pair[0]), 0);
        assert_true(sd_bus_start(bus) >= 0);

        assert_true(sd_bus_message_new_method_call(bus, &m, "org.freedesktop.systemd1",
                                                   "/org/freedesktop/systemd1",
                                                   "org.freedesktop.systemd1.Manager",
                                                   "StartTransientUnit") >= 0);
        assert_true(sd_bus_message_append(m, "ss", "corral-job-42.scope", "fail") >= 0);
        assert_true(sd_bus_message_open_container(m, 'a', "(sv)") >= 0);
        assert_int_equal(exec_properties_append(p, m), 0);
        assert_true(sd_bus_message_close_container(m) >= 0);
        assert_true(sd_bus_message_append(m, "a(sa(sv))", 0) >= 0);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        assert_string_equal(sd_bus_message_get_signature(m, true), "ssa(sv)a(sa(sv))");

        /* Read it back: every property with the signature its type promises. */
        assert_true(sd_bus_message_rewind(m, true) >= 0);
        assert_true(sd_bus_message_read(m, "ss", &name, &mode) >= 0);
        assert_string_equal(name, "corral-job-42.scope");
        assert_true(sd_bus_message_enter_container(m, 'a', "(sv)") > 0);
        while (sd_bus_message_enter_container(m, 'r', "sv") > 0) {
                const ExecProperty *want = &p->items[i++];
                const char *pname, *contents;
                char type;

                assert_true(sd_bus_message_read(m, "s", &pname) > 0);
                assert_string_equal(pname, want->name);
                assert_true(sd_bus_message_peek_type(m, &type, &contents) > 0);
                assert_int_equal(type, 'v');
                assert_string_equal(contents, exec_property_signature(want->type));

                if (want->type == EXEC_PROPERTY_BYTES) {
                        const void *data;
                        size_t size;

                        assert_true(sd_bus_message_enter_container(m, 'v', "ay") > 0);
                        assert_true(sd_bus_message_read_array(m, 'y', &data, &size) >= 0);
                        assert_int_equal(size, want->bytes.size);
                        assert_memory_equal(data, want->bytes.data, size);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                } else if (want->type == EXEC_PROPERTY_IO_LIMITS) {
                        const char *dev;
                        uint64_t v;
                        size_t k = 0;

                        assert_true(sd_bus_message_enter_container(m, 'v', "a(st)") > 0);
                        assert_true(sd_bus_message_enter_container(m, 'a', "(st)") > 0);
                        while (sd_bus_message_read(m, "(st)", &dev, &v) > 0) {
                                assert_true(k < want->io.n);
                                assert_string_equal(dev, want->io.items[k].device);
                                assert_int_equal(v, want->io.items[k].value);
                                k++;
                        }
                        assert_int_equal(k, want->io.n);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                } else if (want->type == EXEC_PROPERTY_DEVICE_ALLOW) {
                        const char *dev, *perm;
                        size_t k = 0;

                        assert_true(sd_bus_message_enter_container(m, 'v', "a(ss)") > 0);
                        assert_true(sd_bus_message_enter_container(m, 'a', "(ss)") > 0);
                        while (sd_bus_message_read(m, "(ss)", &dev, &perm) > 0) {
                                assert_string_equal(dev, want->strv[k]);
                                assert_string_equal(perm, "rwm");
                                k++;
                        }
                        assert_int_equal(k, strv_length(want->strv));
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                        assert_true(sd_bus_message_exit_container(m) >= 0);
                } else
                        assert_true(sd_bus_message_skip(m, "v") >= 0);
                assert_true(sd_bus_message_exit_container(m) >= 0);
        }
        assert_int_equal(i, p->n);

        sd_bus_message_unref(m);
        sd_bus_close(bus);
        sd_bus_unref(bus);
        close(pair[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_get_and_signature),
                cmocka_unit_test(test_device_fence),
                cmocka_unit_test(test_bus_append),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

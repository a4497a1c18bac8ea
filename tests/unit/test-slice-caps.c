/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A project slice's caps (executor/slice-caps.c): the SetUnitProperties call, read back
 * property by property, and its answer from a stand-in for systemd on the other end of a
 * socket pair. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <systemd/sd-id128.h>

#include "executor/executor.h"

static sd_bus *client_bus(int fd) {
        sd_bus *bus = NULL;

        assert_int_equal(sd_bus_new(&bus), 0);
        assert_int_equal(sd_bus_set_fd(bus, fd, fd), 0);
        assert_true(sd_bus_start(bus) >= 0);
        return bus;
}

typedef struct Want {
        const char *slice;
        const uint8_t *cpus;
        size_t n_cpus;
        uint64_t memory_max, memory_high, cpu_weight, io_weight, tasks_max;
} Want;

/* The call as systemd reads it: every cap in this order, nothing else. */
static void check_message(sd_bus_message *m, const Want *want) {
        static const char *const names[] = { "MemoryMax", "MemoryHigh", "CPUWeight", "IOWeight", "TasksMax" };
        const uint64_t values[] = { want->memory_max, want->memory_high, want->cpu_weight, want->io_weight,
                                    want->tasks_max };
        const char *slice, *name;
        const void *data;
        size_t size;
        int runtime;

        assert_string_equal(sd_bus_message_get_destination(m), "org.freedesktop.systemd1");
        assert_string_equal(sd_bus_message_get_path(m), "/org/freedesktop/systemd1");
        assert_string_equal(sd_bus_message_get_interface(m), "org.freedesktop.systemd1.Manager");
        assert_string_equal(sd_bus_message_get_member(m), "SetUnitProperties");
        assert_string_equal(sd_bus_message_get_signature(m, true), "sba(sv)");

        assert_true(sd_bus_message_read(m, "sb", &slice, &runtime) > 0);
        assert_string_equal(slice, want->slice);
        assert_true(runtime);
        assert_true(sd_bus_message_enter_container(m, 'a', "(sv)") > 0);

        assert_true(sd_bus_message_enter_container(m, 'r', "sv") > 0);
        assert_true(sd_bus_message_read(m, "s", &name) > 0);
        assert_string_equal(name, "AllowedCPUs");
        assert_true(sd_bus_message_enter_container(m, 'v', "ay") > 0);
        assert_true(sd_bus_message_read_array(m, 'y', &data, &size) >= 0);
        assert_int_equal(size, want->n_cpus);
        if (size > 0)
                assert_memory_equal(data, want->cpus, size);
        assert_true(sd_bus_message_exit_container(m) >= 0);
        assert_true(sd_bus_message_exit_container(m) >= 0);

        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                uint64_t v;

                assert_true(sd_bus_message_read(m, "(sv)", &name, "t", &v) > 0);
                assert_string_equal(name, names[i]);
                assert_int_equal(v, values[i]);
        }
        assert_int_equal(sd_bus_message_at_end(m, false), 1);
        assert_true(sd_bus_message_exit_container(m) >= 0);
        assert_int_equal(sd_bus_message_at_end(m, true), 1);
}

static void build_and_check(const char *project, const ExecutorSliceCaps *caps, const Want *want) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char *slice = NULL;
        sd_bus *bus;
        int pair[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        bus = client_bus(pair[0]);
        assert_int_equal(executor_slice_caps_message(bus, project, caps, &m, &slice), 0);
        assert_string_equal(slice, want->slice);
        free(slice);
        assert_true(sd_bus_message_seal(m, 1, 0) >= 0);
        check_message(m, want);
        sd_bus_close(bus);
        sd_bus_unref(bus);
        close(pair[1]);
}

/* Nothing configured: every cap at systemd's default, so a cap set before is lifted. */
static void test_unset_lifts_all(void **state) {
        build_and_check("physics", &(ExecutorSliceCaps) {},
                        &(Want) {
                                .slice = "corral-physics.slice",
                                .memory_max = UINT64_MAX,
                                .memory_high = UINT64_MAX,
                                .cpu_weight = 100,
                                .io_weight = 100,
                                .tasks_max = UINT64_MAX,
                        });
}

static void test_caps(void **state) {
        static const uint8_t mask[] = { 0x01, 0x02 };
        CpuSet cpus;

        assert_int_equal(cpu_set_parse("0,9", &cpus), 0);
        build_and_check("bio-chem",
                        &(ExecutorSliceCaps) {
                                .allowed_cpus = &cpus,
                                .memory_max = 8ULL << 30,
                                .memory_high = 6ULL << 30,
                                .cpu_weight = 50,
                                .io_weight = 200,
                                .tasks_max = 4096,
                        },
                        &(Want) {
                                .slice = "corral-bio\\x2dchem.slice",
                                .cpus = mask,
                                .n_cpus = sizeof mask,
                                .memory_max = 8ULL << 30,
                                .memory_high = 6ULL << 30,
                                .cpu_weight = 50,
                                .io_weight = 200,
                                .tasks_max = 4096,
                        });
}

static void test_refused(void **state) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char long_name[300];
        int pair[2];
        sd_bus *bus;

        /* Past what a unit name may hold, escaped or not. */
        memset(long_name, 'p', sizeof long_name - 1);
        long_name[sizeof long_name - 1] = 0;
        assert_int_equal(executor_set_slice_caps(NULL, "physics", &(ExecutorSliceCaps) {}, NULL, NULL), -ENOTCONN);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        bus = client_bus(pair[0]);
        assert_int_equal(executor_slice_caps_message(bus, long_name, &(ExecutorSliceCaps) {}, &m, NULL), -EINVAL);
        assert_int_equal(executor_set_slice_caps(bus, "", &(ExecutorSliceCaps) {}, NULL, NULL), -EINVAL);
        assert_null(m);
        sd_bus_close(bus);
        sd_bus_unref(bus);
        close(pair[1]);
}

/* The other end: answers each call with an error while fail is set, else an empty return. */
typedef struct FakeSystemd {
        unsigned calls;
        bool fail;
} FakeSystemd;

static int on_call(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        FakeSystemd *f = userdata;

        f->calls++;
        check_message(m, &(Want) {
                .slice = "corral-physics.slice",
                .memory_max = 1 << 20,
                .memory_high = UINT64_MAX,
                .cpu_weight = 100,
                .io_weight = 100,
                .tasks_max = UINT64_MAX,
        });
        if (f->fail)
                return sd_bus_reply_method_errorf(m, "org.freedesktop.DBus.Error.InvalidArgs",
                                                  "Unknown assignment: %s", "MemoryMax");
        return sd_bus_reply_method_return(m, NULL);
}

typedef struct Done {
        unsigned n;
        char *slice, *message;
        int error;
} Done;

static void on_done(const char *slice, int error, const char *message, void *userdata) {
        Done *d = userdata;

        d->n++;
        free(d->slice);
        free(d->message);
        d->slice = strdup(slice);
        d->message = message ? strdup(message) : NULL;
        d->error = error;
}

static void run_until(sd_bus *a, sd_bus *b, const Done *d, unsigned n) {
        for (int i = 0; i < 1000 && d->n < n; i++) {
                int ra, rb;

                ra = sd_bus_process(a, NULL);
                rb = sd_bus_process(b, NULL);
                assert_true(ra >= 0);
                assert_true(rb >= 0);
                if (ra == 0 && rb == 0)
                        (void) sd_bus_wait(a, 10000);
        }
        assert_int_equal(d->n, n);
}

static void test_answer(void **state) {
        FakeSystemd f = {};
        Done d = {};
        sd_bus *a, *b = NULL;
        sd_id128_t id;
        int pair[2];

        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
        assert_int_equal(sd_id128_randomize(&id), 0);
        assert_int_equal(sd_bus_new(&b), 0);
        assert_int_equal(sd_bus_set_fd(b, pair[1], pair[1]), 0);
        assert_int_equal(sd_bus_set_server(b, 1, id), 0);
        assert_true(sd_bus_add_object(b, NULL, "/org/freedesktop/systemd1", on_call, &f) >= 0);
        assert_true(sd_bus_start(b) >= 0);
        a = client_bus(pair[0]);

        /* Refused: the caller learns systemd's words, and the slice they were for. */
        f.fail = true;
        assert_int_equal(executor_set_slice_caps(a, "physics", &(ExecutorSliceCaps) { .memory_max = 1 << 20 }, on_done,
                                                 &d), 0);
        run_until(a, b, &d, 1);
        assert_int_equal(f.calls, 1);
        assert_string_equal(d.slice, "corral-physics.slice");
        assert_int_equal(d.error, -EINVAL);
        assert_string_equal(d.message, "Unknown assignment: MemoryMax");

        f.fail = false;
        assert_int_equal(executor_set_slice_caps(a, "physics", &(ExecutorSliceCaps) { .memory_max = 1 << 20 }, on_done,
                                                 &d), 0);
        run_until(a, b, &d, 2);
        assert_int_equal(f.calls, 2);
        assert_string_equal(d.slice, "corral-physics.slice");
        assert_int_equal(d.error, 0);
        assert_null(d.message);

        /* No one to tell: the call is still made. */
        assert_int_equal(executor_set_slice_caps(a, "physics", &(ExecutorSliceCaps) { .memory_max = 1 << 20 }, NULL,
                                                 NULL), 0);
        for (int i = 0; i < 1000 && f.calls < 3; i++)
                if (sd_bus_process(a, NULL) == 0 && sd_bus_process(b, NULL) == 0)
                        (void) sd_bus_wait(b, 10000);
        assert_int_equal(f.calls, 3);
        assert_int_equal(d.n, 2);

        free(d.slice);
        free(d.message);
        sd_bus_close(a);
        sd_bus_unref(a);
        sd_bus_close(b);
        sd_bus_unref(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unset_lifts_all),
                cmocka_unit_test(test_caps),
                cmocka_unit_test(test_refused),
                cmocka_unit_test(test_answer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

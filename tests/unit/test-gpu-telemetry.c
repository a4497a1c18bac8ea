/* SPDX-License-Identifier: GPL-2.0-or-later */
/* daemon/gpu-telemetry.c: NVML on a thread of its own, answers on the loop. Against the
 * fake libnvidia-ml.so.1 ($FAKE_NVML_LIBRARY): a snapshot's figures are the fake's; no
 * library makes telemetry off, with why; a wedged driver makes it stalled within the
 * timeout while the loop keeps running, and freeing does not wait for it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu-telemetry.h"
#include "time-util.h"

static char config_path[64];

static void write_config(const char *text) {
        char tmp[80];
        FILE *f;

        snprintf(tmp, sizeof tmp, "%s.new", config_path);
        f = fopen(tmp, "we");
        assert_non_null(f);
        assert_true(fputs(text, f) >= 0);
        assert_int_equal(fclose(f), 0);
        assert_int_equal(rename(tmp, config_path), 0);
}

typedef struct Seen {
        int calls;
        int r;
        size_t n_gpus;
        char uuid0[NVML_UUID_MAX];
        int util0;
        uint64_t energy1;
        unsigned ticks;          /* the loop's own timer, firing while NVML is stuck */
        sd_event *event;
} Seen;

static void on_done(GpuTelemetry *t, int r, const GpuSnapshot *s, void *userdata) {
        Seen *seen = userdata;

        seen->calls++;
        seen->r = r;
        seen->n_gpus = s ? s->n_gpus : 0;
        if (s && s->n_gpus > 0) {
                memcpy(seen->uuid0, s->gpus[0].uuid, sizeof seen->uuid0);
                seen->util0 = s->samples[0].utilization;
        }
        if (s && s->n_gpus > 1)
                seen->energy1 = s->samples[1].energy_mj;
}

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata) {
        Seen *seen = userdata;

        seen->ticks++;
        (void) sd_event_source_set_time_relative(s, 20 * 1000);
        return 0;
}

/* Runs the loop until done() is called, 10 s at most. */
static void run_until_done(sd_event *e, Seen *seen) {
        uint64_t until = now_usec(CLOCK_MONOTONIC) + 10 * USEC_PER_SEC;
        int calls = seen->calls;

        while (seen->calls == calls && now_usec(CLOCK_MONOTONIC) < until)
                assert_int_equal(MIN(sd_event_run(e, 100 * 1000), 0), 0);
        assert_int_equal(seen->calls, calls + 1);
}

static int setup(void **state) {
        int fd;

        snprintf(config_path, sizeof config_path, "/tmp/test-gpu-telemetry.XXXXXX");
        fd = mkstemp(config_path);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(setenv("FAKE_NVML_CONFIG", config_path, 1), 0);
        assert_non_null(getenv("FAKE_NVML_LIBRARY"));
        return 0;
}

static int teardown(void **state) {
        unlink(config_path);
        return 0;
}

static void test_snapshot(void **state) {
        sd_event *e = NULL;
        GpuTelemetry *t = NULL;
        Seen seen = {};
        const char *reason;

        write_config("gpu uuid=GPU-0 util=33 energy=100\ngpu uuid=GPU-1 util=0 energy=98765\n");
        assert_int_equal(sd_event_new(&e), 0);
        seen.event = e;
        assert_int_equal(gpu_telemetry_new(e, getenv("FAKE_NVML_LIBRARY"), 5 * USEC_PER_SEC, on_done, &seen, &t), 0);
        assert_int_equal(gpu_telemetry_state(t, NULL), GPU_TELEMETRY_STARTING);
        assert_int_equal(gpu_telemetry_request(t), 0);
        assert_int_equal(gpu_telemetry_request(t), -EBUSY);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, 0);
        assert_int_equal(seen.n_gpus, 2);
        assert_string_equal(seen.uuid0, "GPU-0");
        assert_int_equal(seen.util0, 33);
        assert_true(seen.energy1 == 98765);
        assert_int_equal(gpu_telemetry_state(t, &reason), GPU_TELEMETRY_ON);
        assert_null(reason);

        /* The next snapshot reads the counters as they are then. */
        write_config("gpu uuid=GPU-0 util=88 energy=200\n");
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.n_gpus, 1);
        assert_int_equal(seen.util0, 88);

        gpu_telemetry_free(t);
        sd_event_unref(e);
}

static void test_off(void **state) {
        sd_event *e = NULL;
        GpuTelemetry *t = NULL;
        Seen seen = {};
        const char *reason;

        assert_int_equal(sd_event_new(&e), 0);
        seen.event = e;
        assert_int_equal(gpu_telemetry_new(e, "/nonexistent/libnvidia-ml.so.1", 5 * USEC_PER_SEC, on_done, &seen, &t), 0);
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, -ENOENT);
        assert_int_equal(gpu_telemetry_state(t, &reason), GPU_TELEMETRY_OFF);
        assert_non_null(reason);
        assert_true(strncmp(reason, "/nonexistent/libnvidia-ml.so.1 not found", 40) == 0);
        assert_int_equal(gpu_telemetry_request(t), -ENODEV);
        gpu_telemetry_free(t);

        /* A driver that does not start. */
        write_config("init-error 9\n");
        assert_int_equal(gpu_telemetry_new(e, getenv("FAKE_NVML_LIBRARY"), 5 * USEC_PER_SEC, on_done, &seen, &t), 0);
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, -EIO);
        assert_int_equal(gpu_telemetry_state(t, &reason), GPU_TELEMETRY_OFF);
        assert_string_equal(reason, "nvmlInit failed: Driver Not Loaded");
        assert_string_equal(gpu_telemetry_state_to_string(GPU_TELEMETRY_OFF), "off");
        gpu_telemetry_free(t);
        sd_event_unref(e);
}

static void test_wedged(void **state) {
        sd_event *e = NULL;
        sd_event_source *tick = NULL;
        GpuTelemetry *t = NULL;
        Seen seen = {};
        const char *reason;
        uint64_t start, took;

        assert_int_equal(sd_event_new(&e), 0);
        seen.event = e;
        assert_int_equal(sd_event_add_time_relative(e, &tick, CLOCK_MONOTONIC, 20 * 1000, 1, on_tick, &seen), 0);
        assert_int_equal(sd_event_source_set_enabled(tick, SD_EVENT_ON), 0);

        write_config("gpu uuid=GPU-0 util=10\n");
        assert_int_equal(gpu_telemetry_new(e, getenv("FAKE_NVML_LIBRARY"), 300 * 1000, on_done, &seen, &t), 0);
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, 0);

        /* The driver wedges: the caller hears of it within the timeout, the loop runs on. */
        write_config("wedge\ngpu uuid=GPU-0 util=10\n");
        seen.ticks = 0;
        start = now_usec(CLOCK_MONOTONIC);
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        took = now_usec(CLOCK_MONOTONIC) - start;
        assert_int_equal(seen.r, -ETIMEDOUT);
        assert_true(took >= 300 * 1000 && took < 3 * USEC_PER_SEC);
        assert_true(seen.ticks >= 5);
        assert_int_equal(gpu_telemetry_state(t, &reason), GPU_TELEMETRY_STALLED);
        assert_string_equal(reason, "an NVML call has not returned in 300 ms");
        assert_int_equal(gpu_telemetry_request(t), -EBUSY);

        /* The driver comes back: the late answer ends the stall, the next snapshot is new. */
        write_config("gpu uuid=GPU-0 util=77\n");
        start = now_usec(CLOCK_MONOTONIC);
        while (gpu_telemetry_state(t, NULL) == GPU_TELEMETRY_STALLED &&
               now_usec(CLOCK_MONOTONIC) - start < 5 * USEC_PER_SEC)
                assert_true(sd_event_run(e, 100 * 1000) >= 0);
        assert_int_equal(gpu_telemetry_state(t, NULL), GPU_TELEMETRY_ON);
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, 0);
        assert_int_equal(seen.util0, 77);

        /* Wedged again and freed: freeing leaves the stuck thread behind, in bounded time. */
        write_config("wedge\n");
        assert_int_equal(gpu_telemetry_request(t), 0);
        run_until_done(e, &seen);
        assert_int_equal(seen.r, -ETIMEDOUT);
        start = now_usec(CLOCK_MONOTONIC);
        gpu_telemetry_free(t);
        assert_true(now_usec(CLOCK_MONOTONIC) - start < 3 * USEC_PER_SEC);
        sd_event_source_unref(tick);
        sd_event_unref(e);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_snapshot),
                cmocka_unit_test(test_off),
                /* Last: it leaves a thread stuck in the fake behind. */
                cmocka_unit_test(test_wedged),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}

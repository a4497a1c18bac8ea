/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "fd-util.h"
#include "gpu-procs.h"
#include "gpu-telemetry.h"
#include "time-util.h"

/* GPUs read per snapshot at most: SCHED_GPUS_MAX, as many as corrald schedules. */
#define GPU_TELEMETRY_GPUS_MAX 64U

/* What the loop and the thread share. It outlives a GpuTelemetry freed while the thread is
 * stuck in the driver: the last of the two to let go frees it. */
typedef struct Shared {
        atomic_uint n_ref;
        pthread_mutex_t lock;
        pthread_cond_t wake, exited_cond;
        bool requested, quit, exited;
        /* The thread's answer, under lock until the loop takes it. */
        bool answered;
        int r;
        char *error;
        GpuSnapshot snapshot;
        bool off;                /* the answer is that NVML could not start: the thread is gone */
        char *library;           /* NULL: nvml_open()'s default */
        char *proc_root;         /* NULL: /proc; read-only once the thread runs */
        int efd;                 /* the thread writes, the loop reads */
} Shared;

struct GpuTelemetry {
        Shared *shared;
        bool thread_started;
        bool in_flight;
        GpuTelemetryState status;
        char *reason;
        uint64_t timeout_usec;
        sd_event *event;
        sd_event_source *io, *timer;
        gpu_telemetry_done_t done;
        void *userdata;
};

static void snapshot_done(GpuSnapshot *s) {
        free(s->gpus);
        free(s->samples);
        *s = (GpuSnapshot) {};
}

static void shared_unref(Shared *s) {
        if (!s || atomic_fetch_sub(&s->n_ref, 1) != 1)
                return;
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        pthread_cond_destroy(&s->exited_cond);
        free(s->error);
        snapshot_done(&s->snapshot);
        free(s->library);
        free(s->proc_root);
        safe_close(s->efd);
        free(s);
}

static int take_snapshot(Nvml *n, GpuSnapshot *ret, char **ret_error) {
        _cleanup_(snapshot_done) GpuSnapshot s = {};
        unsigned count;
        int r;

        r = nvml_count(n, &count, ret_error);
        if (r < 0)
                return r;
        count = MIN(count, GPU_TELEMETRY_GPUS_MAX);
        s.gpus = calloc(count ?: 1, sizeof *s.gpus);
        s.samples = calloc(count ?: 1, sizeof *s.samples);
        if (!s.gpus || !s.samples)
                return -ENOMEM;
        for (unsigned i = 0; i < count; i++) {
                /* A GPU NVML cannot read (lost, being reset) is left out of this snapshot. */
                if (nvml_gpu_info(n, i, &s.gpus[s.n_gpus], NULL) < 0 ||
                    nvml_gpu_sample(n, i, &s.samples[s.n_gpus], NULL) < 0)
                        continue;
                s.n_gpus++;
        }
        s.taken_usec = now_usec(CLOCK_MONOTONIC);
        *ret = s;
        s = (GpuSnapshot) {};
        return 0;
}

static void answer(Shared *sh, int r, char *error, const GpuSnapshot *s, bool off) {
        uint64_t one = 1;

        pthread_mutex_lock(&sh->lock);
        sh->answered = true;
        sh->r = r;
        free(sh->error);
        sh->error = error;
        snapshot_done(&sh->snapshot);
        if (s)
                sh->snapshot = *s;
        sh->off = off;
        (void) !write(sh->efd, &one, sizeof one);
        pthread_mutex_unlock(&sh->lock);
}

static void *thread_main(void *userdata) {
        Shared *sh = userdata;
        _cleanup_(nvml_closep) Nvml *n = NULL;

        pthread_mutex_lock(&sh->lock);
        for (;;) {
                char *error = NULL;
                GpuSnapshot s = {};
                int r;

                while (!sh->requested && !sh->quit)
                        pthread_cond_wait(&sh->wake, &sh->lock);
                if (sh->quit)
                        break;
                sh->requested = false;
                pthread_mutex_unlock(&sh->lock);

                if (!n) {
                        r = nvml_open(sh->library, &n, &error);
                        if (r < 0) {
                                answer(sh, r, error, NULL, true);
                                pthread_mutex_lock(&sh->lock);
                                break;
                        }
                }
                r = take_snapshot(n, &s, &error);
                if (r >= 0) {
                        /* Whose each GPU's processes are, here off the loop: procfs may be slow. */
                        _cleanup_close_ int proc_fd = open(sh->proc_root ?: "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

                        if (proc_fd >= 0)
                                gpu_samples_owners(proc_fd, s.samples, s.n_gpus);
                }
                answer(sh, r, error, r >= 0 ? &s : NULL, false);
                pthread_mutex_lock(&sh->lock);
        }
        pthread_mutex_unlock(&sh->lock);
        /* nvmlShutdown may wedge too: the loop does not wait for it beyond a bound. */
        n = nvml_close(n);
        pthread_mutex_lock(&sh->lock);
        sh->exited = true;
        pthread_cond_broadcast(&sh->exited_cond);
        pthread_mutex_unlock(&sh->lock);
        shared_unref(sh);
        return NULL;
}

static void set_state(GpuTelemetry *t, GpuTelemetryState state, const char *reason) {
        char *copy = reason ? strdup(reason) : NULL;

        t->status = state;
        free(t->reason);
        t->reason = copy;
}

static int on_answer(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        GpuTelemetry *t = userdata;
        Shared *sh = t->shared;
        _cleanup_(snapshot_done) GpuSnapshot snap = {};
        _cleanup_free_ char *error = NULL;
        bool answered, off;
        uint64_t n;
        int r;

        (void) !read(sh->efd, &n, sizeof n);
        pthread_mutex_lock(&sh->lock);
        answered = sh->answered;
        sh->answered = false;
        r = sh->r;
        error = TAKE_PTR(sh->error);
        snap = sh->snapshot;
        sh->snapshot = (GpuSnapshot) {};
        off = sh->off;
        pthread_mutex_unlock(&sh->lock);
        if (!answered)
                return 0;

        bool was_stalled = t->status == GPU_TELEMETRY_STALLED;
        t->in_flight = false;
        (void) sd_event_source_set_enabled(t->timer, SD_EVENT_OFF);
        if (off) {
                set_state(t, GPU_TELEMETRY_OFF, error ?: "NVML failed to start");
                t->io = sd_event_source_disable_unref(t->io);
        } else if (r < 0)
                set_state(t, GPU_TELEMETRY_ON, error);
        else
                set_state(t, GPU_TELEMETRY_ON, NULL);
        /* A stalled call's late answer ends the stall; its figures are stale, not handed on. */
        if (was_stalled && !off)
                return 0;
        t->done(t, r, r >= 0 ? &snap : NULL, t->userdata);
        return 0;
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        GpuTelemetry *t = userdata;
        char buf[96];

        if (!t->in_flight || t->status == GPU_TELEMETRY_STALLED)
                return 0;
        if (t->timeout_usec % USEC_PER_SEC == 0)
                snprintf(buf, sizeof buf, "an NVML call has not returned in %llu s",
                         (unsigned long long) (t->timeout_usec / USEC_PER_SEC));
        else
                snprintf(buf, sizeof buf, "an NVML call has not returned in %llu ms",
                         (unsigned long long) (t->timeout_usec / 1000));
        set_state(t, GPU_TELEMETRY_STALLED, buf);
        t->done(t, -ETIMEDOUT, NULL, t->userdata);
        return 0;
}

int gpu_telemetry_set_proc_root(GpuTelemetry *t, const char *path) {
        char *copy;

        if (t->thread_started)
                return -EBUSY;
        copy = path ? strdup(path) : NULL;
        if (path && !copy)
                return -ENOMEM;
        free(t->shared->proc_root);
        t->shared->proc_root = copy;
        return 0;
}

int gpu_telemetry_new(sd_event *event, const char *library, uint64_t timeout_usec,
                      gpu_telemetry_done_t done, void *userdata, GpuTelemetry **ret) {
        _cleanup_(gpu_telemetry_freep) GpuTelemetry *t = NULL;
        Shared *sh;
        int r;

        assert(event && done && ret);
        t = calloc(1, sizeof *t);
        if (!t)
                return -ENOMEM;
        t->event = sd_event_ref(event);
        t->timeout_usec = timeout_usec;
        t->done = done;
        t->userdata = userdata;
        t->status = GPU_TELEMETRY_STARTING;

        sh = t->shared = calloc(1, sizeof *sh);
        if (!sh)
                return -ENOMEM;
        atomic_init(&sh->n_ref, 1);
        pthread_mutex_init(&sh->lock, NULL);
        pthread_cond_init(&sh->wake, NULL);
        pthread_cond_init(&sh->exited_cond, NULL);
        sh->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (sh->efd < 0)
                return -errno;
        if (library) {
                sh->library = strdup(library);
                if (!sh->library)
                        return -ENOMEM;
        }
        r = sd_event_add_io(event, &t->io, sh->efd, EPOLLIN, on_answer, t);
        if (r < 0)
                return r;
        r = sd_event_add_time(event, &t->timer, CLOCK_MONOTONIC, UINT64_MAX, 0, on_timeout, t);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(t->timer, SD_EVENT_OFF);
        *ret = TAKE_PTR(t);
        return 0;
}

int gpu_telemetry_request(GpuTelemetry *t) {
        Shared *sh = t->shared;
        int r;

        if (t->status == GPU_TELEMETRY_OFF)
                return -ENODEV;
        if (t->in_flight)
                return -EBUSY;
        if (!t->thread_started) {
                pthread_attr_t attr;
                pthread_t tid;

                /* Detached: a thread stuck in the driver is never joined. */
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                atomic_fetch_add(&sh->n_ref, 1);
                r = -pthread_create(&tid, &attr, thread_main, sh);
                pthread_attr_destroy(&attr);
                if (r < 0) {
                        atomic_fetch_sub(&sh->n_ref, 1);
                        return r;
                }
                t->thread_started = true;
        }
        /* From the clock now, not the loop's cached time of its last wakeup: a request made
         * long after it would otherwise time out early. */
        r = sd_event_source_set_time(t->timer, now_usec(CLOCK_MONOTONIC) + t->timeout_usec);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(t->timer, SD_EVENT_ONESHOT);
        if (r < 0)
                return r;
        pthread_mutex_lock(&sh->lock);
        sh->requested = true;
        pthread_cond_signal(&sh->wake);
        pthread_mutex_unlock(&sh->lock);
        t->in_flight = true;
        return 0;
}

/* How long freeing waits for the thread to close NVML before leaving it behind. */
#define GPU_TELEMETRY_EXIT_WAIT_USEC (1 * USEC_PER_SEC)

GpuTelemetry *gpu_telemetry_free(GpuTelemetry *t) {
        if (!t)
                return NULL;
        if (t->shared) {
                Shared *sh = t->shared;

                pthread_mutex_lock(&sh->lock);
                sh->quit = true;
                pthread_cond_signal(&sh->wake);
                if (t->thread_started) {
                        struct timespec until;
                        uint64_t u = now_usec(CLOCK_REALTIME) + GPU_TELEMETRY_EXIT_WAIT_USEC;

                        until = (struct timespec) { .tv_sec = u / USEC_PER_SEC, .tv_nsec = (u % USEC_PER_SEC) * 1000 };
                        while (!sh->exited &&
                               pthread_cond_timedwait(&sh->exited_cond, &sh->lock, &until) == 0)
                                ;
                }
                pthread_mutex_unlock(&sh->lock);
        }
        /* Off the loop before the shared eventfd may close. */
        sd_event_source_disable_unref(t->io);
        sd_event_source_disable_unref(t->timer);
        if (t->shared)
                shared_unref(t->shared);
        sd_event_unref(t->event);
        free(t->reason);
        free(t);
        return NULL;
}

GpuTelemetryState gpu_telemetry_state(const GpuTelemetry *t, const char **ret_reason) {
        if (ret_reason)
                *ret_reason = t->reason;
        return t->status;
}

const char *gpu_telemetry_state_to_string(GpuTelemetryState s) {
        static const char *const table[_GPU_TELEMETRY_STATE_MAX] = {
                [GPU_TELEMETRY_STARTING] = "starting",
                [GPU_TELEMETRY_ON] = "on",
                [GPU_TELEMETRY_OFF] = "off",
                [GPU_TELEMETRY_STALLED] = "stalled",
        };
        return s >= 0 && s < _GPU_TELEMETRY_STATE_MAX ? table[s] : NULL;
}

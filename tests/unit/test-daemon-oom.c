/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Allocation failures on a job's start and end, in systemd's style: the allocator of this
 * binary is wrapped (the linker's --wrap for what our code calls: malloc, calloc, realloc,
 * reallocarray, strdup, strndup, asprintf, vasprintf; SQLite's own through
 * SQLITE_CONFIG_MALLOC) and made to fail its Nth allocation from the moment it is armed,
 * around one step of the daemon's work, for N = 0, 1, 2, ... until the step runs through
 * without a failure injected. After each, what the daemon does next is done (the commit of
 * the post-iteration source, the outcome files removed once committed; when a commit fails,
 * corrald exits and starts again: the test frees the manager and loads the store anew) and
 * the job must be neither lost nor half changed:
 *   - a pass that decided its start leaves it queued (a later pass starts it) or running
 *     with its launch pending, the same in memory and in the store;
 *   - a launch leaves it started (the executor asked once) or failed with a reason, or,
 *     when even its failure could not be stored, to be launched again after the next pass;
 *   - the end of its run leaves the outcome file in place (it is read again) or the job
 *     ended once, with its outcome's state, one charge and the run's fair-share usage
 *     exactly as a run without failures has them.
 * Leaks and invalid accesses: run it under ASan (HACKING.md, "Sanitizers"). The executor
 * has no bus: executor_start_fds() is wrapped too, to fail as it does then (-ENOTCONN) or
 * to succeed. Not failed: what json-c and libc allocate inside themselves (a JSON parse's
 * objects, open_memstream(), NSS), which --wrap does not reach. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/backend-local.h"
#include "daemon/commit.h"
#include "daemon/job-outcome.h"
#include "daemon/job-table.h"
#include "daemon/manager.h"
#include "daemon/sched-driver.h"
#include "daemon/usage.h"
#include "executor-internal.h"
#include "fd-util.h"
#include "json-util.h"
#include "log.h"
#include "spec-json.h"
#include "test-manager-call.h"

#define NOBODY 65534
#define USEC UINT64_C(1000000)
/* More than any step here makes; reaching it means the loop does not end. */
#define OOM_STEPS_MAX 5000

/* ---- the allocator ---- */

static long oom_countdown = -1; /* allocations left before the one that fails; -1: disarmed */
static bool oom_injected;
/* How the steps under test came out, for the log: corrald exited (a commit failed), an
 * outcome was read again. */
static unsigned n_exits, n_reread;

static bool oom_fail(void) {
        if (oom_countdown < 0)
                return false;
        if (oom_countdown-- > 0)
                return false;
        oom_injected = true;
        errno = ENOMEM;
        return true;
}

static void oom_arm(long n) {
        oom_injected = false;
        oom_countdown = n;
}

/* Whether a failure was injected since oom_arm(). */
static bool oom_disarm(void) {
        oom_countdown = -1;
        return oom_injected;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__real_reallocarray(void *p, size_t n, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **ret, const char *format, va_list ap);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_reallocarray(void *p, size_t n, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **ret, const char *format, va_list ap);
int __wrap_asprintf(char **ret, const char *format, ...) _printf_(2, 3);

void *__wrap_malloc(size_t n) {
        return oom_fail() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
        return oom_fail() ? NULL : __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
        return oom_fail() ? NULL : __real_realloc(p, n);
}
void *__wrap_reallocarray(void *p, size_t n, size_t size) {
        return oom_fail() ? NULL : __real_reallocarray(p, n, size);
}
char *__wrap_strdup(const char *s) {
        return oom_fail() ? NULL : __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n) {
        return oom_fail() ? NULL : __real_strndup(s, n);
}
int __wrap_vasprintf(char **ret, const char *format, va_list ap) {
        return oom_fail() ? -1 : __real_vasprintf(ret, format, ap);
}
int __wrap_asprintf(char **ret, const char *format, ...) {
        va_list ap;
        int r;

        if (oom_fail())
                return -1;
        va_start(ap, format);
        r = __real_vasprintf(ret, format, ap);
        va_end(ap);
        return r;
}

static sqlite3_mem_methods sqlite_mem;

static void *sqlite_malloc(int n) {
        return oom_fail() ? NULL : sqlite_mem.xMalloc(n);
}
static void *sqlite_realloc(void *p, int n) {
        return oom_fail() ? NULL : sqlite_mem.xRealloc(p, n);
}

/* ---- the executor: no bus ---- */

static bool start_succeeds;   /* false: as without a bus */
static unsigned starts_asked; /* launches the executor accepted */

int __real_executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds);
int __wrap_executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds);
int __wrap_executor_start_fds(Executor *e, const JobSpec *spec, const int *fds, size_t n_fds) {
        if (!start_succeeds)
                return __real_executor_start_fds(e, spec, fds, n_fds);
        /* What a launch needs from the spec is there. */
        assert_non_null(spec->argv);
        assert_string_equal(spec->argv[0], "/bin/true");
        assert_non_null(spec->stdout_path);
        assert_int_equal(spec->n_io_limits, 1);
        starts_asked++;
        return 0;
}

/* ---- a manager in a tmpdir ---- */

typedef struct Env {
        char dir[PATH_MAX];
        const char *run;
        Manager *m;
} Env;

static SchedNode nodes[1];

/* Made once for every step: an empty store, copied for each (creating one, its schema
 * and migrations, was most of a step's time), and the executor with its run directory
 * (each executor's watch on the results directory costs the kernel milliseconds to
 * close), handed to each step's manager. */
static char template_dir[PATH_MAX], template_db[PATH_MAX + 16], run_dir[PATH_MAX + 16];
static sd_event *event;
static Executor *executor;

static const char *tmp_base(void) {
        return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

static void shared_new(void) {
        _cleanup_(store_closep) Store *s = NULL;

        snprintf(template_dir, sizeof template_dir, "%s/test-daemon-oom.XXXXXX", tmp_base());
        assert_non_null(mkdtemp(template_dir));
        assert_int_equal(store_open(template_dir, &s), 0);
        s = store_close(s);
        snprintf(template_db, sizeof template_db, "%s/corral.db", template_dir);
        snprintf(run_dir, sizeof run_dir, "%s/run", template_dir);
        assert_int_equal(sd_event_new(&event), 0);
        assert_int_equal(executor_new(event, NULL,
                                      &(ExecutorConfig) { .supervisor_path = "/nonexistent", .run_dir = run_dir,
                                                          .cgroup_root = template_dir,
                                                          .on_started = manager_on_job_started,
                                                          .on_finished = manager_on_job_finished },
                                      &executor),
                         0);
        /* The watch on the results directory is made now, not in a step under test. */
        assert_int_equal(executor_scan_outcomes(executor), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void remove_tree(const char *dir) {
        /* Not rm -rf: a shell per step would be most of the test's time. */
        assert_int_equal(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}

static void shared_free(void) {
        executor = executor_free(executor);
        event = sd_event_unref(event);
        if (template_dir[0])
                remove_tree(template_dir);
}

static void copy_file(const char *from, const char *to) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        FILE *f;

        assert_int_equal(read_file_at(AT_FDCWD, from, 16 << 20, &text, &size), 0);
        f = fopen(to, "we");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, size, f), size);
        assert_int_equal(fclose(f), 0);
}

static Manager *manager_open(Env *env) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL;

        assert_non_null(m);
        manager_pick_backends(m);
        m->confdir = strdup(env->dir);
        m->statedir = strdup(env->dir);
        assert_non_null(m->confdir);
        if (manager_reload(m, &err) < 0) /* no corral.conf: defaults */
                fail_msg("configuration: %s", strna(err));
        assert_int_equal(store_open(env->dir, &m->store), 0);
        m->executor = executor;
        /* The executor reports to this step's manager (executor-internal.h). */
        executor->config.userdata = m;
        assert_int_equal(accounting_new(m->store, m->executor, m->config, &m->acct), 0);
        m->nss = nss_cache_new(&nss_ops_libc);
        assert_non_null(m->nss);
        m->sched = sched_context_new();
        assert_non_null(m->sched);
        nodes[0] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
        for (unsigned c = 0; c < 4; c++)
                cpu_set_add(&nodes[0].cpus, c);
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 1 };
        m->numa_ids = calloc(1, sizeof(unsigned));
        assert_non_null(m->numa_ids);
        m->next_id = 1;
        strcpy(m->hostname, "testhost");
        env->m = m;
        return m;
}

static void manager_close(Env *env) {
        if (!env->m)
                return;
        env->m->executor = NULL; /* shared */
        env->m = manager_free(env->m);
}

/* corrald exits (a commit failed) and starts again: what the store holds is loaded. */
static Manager *manager_restart(Env *env) {
        n_exits++;
        manager_close(env);
        manager_open(env);
        assert_int_equal(manager_load_jobs(env->m), 0);
        return env->m;
}

static void env_new(Env *env, const char *name) {
        char db[PATH_MAX + 16];

        *env = (Env) { .run = run_dir };
        if (!executor)
                shared_new();
        snprintf(env->dir, sizeof env->dir, "%s/test-daemon-oom-%s.XXXXXX", tmp_base(), name);
        assert_non_null(mkdtemp(env->dir));
        snprintf(db, sizeof db, "%s/corral.db", env->dir);
        copy_file(template_db, db);
        manager_open(env);
}

static void env_done(Env *env) {
        manager_close(env);
        remove_tree(env->dir);
}

static uint64_t submit(Manager *m) {
        json_object *r = call(m, NOBODY, CORRAL_METHOD_SUBMIT,
                              "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\",\"name\":\"oom\","
                              "\"stdout_path\":\"out-%j.txt\",\"env\":[\"A=1\"],"
                              "\"io_read_bw\":[{\"device\":\"/dev/vdb\",\"limit\":1000}]}");
        json_object *p, *v;
        uint64_t id;

        if (json_object_object_get_ex(r, "error", &v))
                fail_msg("submit: %s", json_object_to_json_string(r));
        assert_true(json_object_object_get_ex(r, "parameters", &p));
        assert_true(json_object_object_get_ex(p, "job_id", &v));
        id = (uint64_t) json_object_get_int64(v);
        json_object_put(r);
        assert_int_equal(store_commit(m->store), 0);
        return id;
}

/* What on_post() does after the step: the commit, then the outcome files it recorded
 * removed. false: the commit failed, and corrald would exit there. */
static bool post(Manager *m) {
        if (manager_commit(m) < 0)
                return false;
        for (size_t i = 0; i < m->n_outcomes_done; i++)
                (void) executor_outcome_consumed(m->executor, m->outcomes_done[i], true);
        m->n_outcomes_done = 0;
        return true;
}

/* ---- what the store holds ---- */

typedef struct Stored {
        uint64_t id;
        Job *job;
} Stored;

static int stored_one(Job *j, void *userdata) {
        Stored *s = userdata;

        if (j->id == s->id && !s->job)
                s->job = j;
        else
                job_free(j);
        return 0;
}

/* The job as committed, read through a connection of its own. */
static Job *stored_job(Env *env, uint64_t id) {
        _cleanup_(store_closep) Store *s = NULL;
        Stored st = { .id = id };

        assert_int_equal(store_open_reader(env->dir, &s), 0);
        assert_int_equal(store_load_jobs(s, stored_one, &st), 0);
        assert_non_null(st.job);
        return st.job;
}

static bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

static unsigned count_active(Manager *m) {
        unsigned n = 0;

        for (size_t i = 0; i < m->n_jobs; i++)
                n += job_state_is_active(m->jobs[i]->state);
        return n;
}

/* Memory and store agree on the job, and the running count on the jobs. */
static void assert_consistent(Env *env, uint64_t id) {
        Job *j = manager_find_job(env->m, id), *s = stored_job(env, id);

        assert_non_null(j);
        if (j->state != s->state || !streq_ptr(job_reason(j), job_reason(s)) || j->start_time != s->start_time ||
            j->end_time != s->end_time || job_run(j)->exit_code != job_run(s)->exit_code ||
            !streq_ptr(job_run(j)->launch_error, job_run(s)->launch_error))
                fail_msg("job %" PRIu64 ": in memory %s (%s) started %" PRIu64 " ended %" PRIu64 " exit %d (%s), "
                         "in the store %s (%s) started %" PRIu64 " ended %" PRIu64 " exit %d (%s)",
                         id, job_state_to_string(j->state), strna(job_reason(j)), (uint64_t) j->start_time,
                         (uint64_t) j->end_time,
                         job_run(j)->exit_code, strna(job_run(j)->launch_error), job_state_to_string(s->state),
                         strna(job_reason(s)), (uint64_t) s->start_time, (uint64_t) s->end_time, job_run(s)->exit_code,
                         strna(job_run(s)->launch_error));
        assert_int_equal(env->m->n_running, count_active(env->m));
        job_free(s);
}

static bool in_to_launch(Manager *m, uint64_t id) {
        for (size_t i = 0; i < m->n_to_launch; i++)
                if (m->to_launch[i] == id)
                        return true;
        return false;
}

/* ---- the start ---- */

/* The pass that decides the start records it; the launch follows the commit. */
static void test_pass_start(void **state) {
        unsigned n;

        start_succeeds = true;
        n_exits = 0;
        for (n = 0; n < OOM_STEPS_MAX; n++) {
                Env env;
                uint64_t id;
                bool injected, committed;
                Job *j;

                env_new(&env, "pass");
                id = submit(env.m);
                starts_asked = 0;

                oom_arm(n);
                (void) manager_schedule(env.m);
                injected = oom_disarm();

                committed = post(env.m);
                if (!committed) {
                        /* corrald exits before it launches anything; the store has the
                         * job as it was before the pass or with the pass's start. */
                        manager_restart(&env);
                        j = manager_find_job(env.m, id);
                        assert_true(j->state == JOB_QUEUED || j->state == JOB_RUNNING);
                        env_done(&env);
                        continue;
                }
                assert_consistent(&env, id);
                j = manager_find_job(env.m, id);
                if (j->state == JOB_RUNNING)
                        /* Not lost: its launch follows the commit. */
                        assert_true(in_to_launch(env.m, id));
                else
                        assert_int_equal(j->state, JOB_QUEUED);
                manager_launch_pending(env.m);
                assert_true(post(env.m));
                if (j->state == JOB_QUEUED) {
                        /* A later pass starts it. */
                        assert_int_equal(manager_schedule(env.m), 0);
                        assert_true(post(env.m));
                        manager_launch_pending(env.m);
                        assert_true(post(env.m));
                }
                assert_int_equal(j->state, JOB_RUNNING);
                assert_int_equal(starts_asked, 1);
                assert_consistent(&env, id);
                env_done(&env);
                if (!injected)
                        break;
        }
        assert_true(n > 10 && n < OOM_STEPS_MAX);
        print_message("pass: %u allocations, %u exits\n", n, n_exits);
}

/* The launch after the commit: the spec built, the executor asked (with no bus it
 * refuses, with the wrap it accepts), and its report. */
typedef enum LaunchMode {
        LAUNCH_NO_BUS,      /* the executor refuses (-ENOTCONN) */
        LAUNCH_STARTED,     /* it accepts and reports the start */
        LAUNCH_START_FAILS, /* it accepts and reports that the start failed */
} LaunchMode;

static const char *const launch_mode_name[] = { "no bus", "started", "start fails" };

/* The launch, and the executor's report of the start. */
static void launch(Manager *m, Job *j, LaunchMode mode) {
        manager_launch_pending(m);
        if (mode == LAUNCH_STARTED && j->state == JOB_RUNNING)
                manager_on_job_started(m->executor, j->id, 0, NULL, m);
        else if (mode == LAUNCH_START_FAILS && j->state == JOB_RUNNING && starts_asked > 0)
                manager_on_job_started(m->executor, j->id, -EIO, "the supervisor did not start", m);
}

static void launch_case(LaunchMode mode) {
        unsigned n;

        start_succeeds = mode != LAUNCH_NO_BUS;
        n_exits = 0;
        for (n = 0; n < OOM_STEPS_MAX; n++) {
                Env env;
                uint64_t id;
                bool injected;
                Job *j;

                env_new(&env, "launch");
                id = submit(env.m);
                assert_int_equal(manager_schedule(env.m), 0);
                assert_true(post(env.m));
                j = manager_find_job(env.m, id);
                assert_int_equal(j->state, JOB_RUNNING);
                starts_asked = 0;

                oom_arm(n);
                launch(env.m, j, mode);
                injected = oom_disarm();

                if (!post(env.m)) {
                        manager_restart(&env);
                        j = manager_find_job(env.m, id);
                        /* As committed after the pass, or failed. */
                        assert_true(j->state == JOB_RUNNING || j->state == JOB_FAILED);
                        env_done(&env);
                        continue;
                }
                assert_consistent(&env, id);
                if (j->state == JOB_RUNNING && in_to_launch(env.m, id)) {
                        /* Its failure could not be recorded: launched again after the
                         * next pass. */
                        assert_true(env.m->sched_needed);
                        assert_true(injected);
                        launch(env.m, j, mode);
                        assert_true(post(env.m));
                        assert_consistent(&env, id);
                }
                if (j->state == JOB_RUNNING) {
                        /* Started, once. */
                        assert_int_equal(mode, LAUNCH_STARTED);
                        assert_int_equal(starts_asked, 1);
                        assert_false(j->launching);
                        assert_false(in_to_launch(env.m, id));
                } else {
                        /* Failed with a reason, the executor asked as the mode says
                         * (never when the spec could not be built). */
                        assert_int_equal(j->state, JOB_FAILED);
                        assert_string_equal(job_reason(j), "LaunchFailed");
                        /* Its words, unless memory was short for them (job.h). */
                        assert_true(injected || job_run(j)->launch_error);
                        if (mode == LAUNCH_NO_BUS || (mode == LAUNCH_STARTED && injected))
                                assert_int_equal(starts_asked, 0);
                        else
                                assert_true(starts_asked <= 2);
                        if (mode == LAUNCH_START_FAILS && !injected)
                                assert_string_equal(job_run(j)->launch_error, "the supervisor did not start");
                }
                env_done(&env);
                if (!injected)
                        break;
        }
        assert_true(n > 5 && n < OOM_STEPS_MAX);
        print_message("launch (%s): %u allocations, %u exits\n", launch_mode_name[mode], n, n_exits);
}

static void test_launch(void **state) {
        launch_case(LAUNCH_STARTED);
        launch_case(LAUNCH_NO_BUS);
        launch_case(LAUNCH_START_FAILS);
}

/* ---- the end ---- */

static const JobOutcome outcome_template = {
        .exit_code = 3,
        .cpu_usage_usec = 2 * USEC,
        .memory_peak = 1 << 20,
        .io_read_bytes = 4096,
        .io_read_ios = 1,
        .io_write_ios = 2,
        .pids_peak = 3,
};

static JobOutcome outcome_for(uint64_t id, uint64_t start) {
        JobOutcome o = outcome_template;

        o.id = id;
        o.start_usec = start * USEC;
        o.end_usec = (start + 60) * USEC;
        return o;
}

static void write_outcome(Env *env, const JobOutcome *o) {
        _cleanup_free_ char *text = NULL;
        char path[PATH_MAX * 2];
        FILE *f;

        assert_int_equal(job_outcome_to_json(o, &text), 0);
        snprintf(path, sizeof path, "%s/results/%" PRIu64 ".json", env->run, o->id);
        f = fopen(path, "we");
        assert_non_null(f);
        fputs(text, f);
        assert_int_equal(fclose(f), 0);
}

static bool outcome_present(Env *env, uint64_t id) {
        char path[PATH_MAX * 2];

        snprintf(path, sizeof path, "%s/results/%" PRIu64 ".json", env->run, id);
        return access(path, F_OK) == 0;
}

typedef struct Decayed {
        unsigned n;
        AcctDecayed value[4];
} Decayed;

static int decayed_one(StoreUsageKind kind, const char *name, const AcctDecayed *d, void *userdata) {
        Decayed *x = userdata;

        assert_true(x->n < ELEMENTSOF(x->value));
        x->value[x->n++] = *d;
        return 0;
}

/* What a run's end leaves, compared with a run without failures: its state, its charge,
 * the fair-share usage it added to the project and the user. */
typedef struct EndRecord {
        JobState state;
        int exit_code;
        JobCharge charge;
        Decayed decayed;
} EndRecord;

static void end_record(Env *env, uint64_t id, EndRecord *ret) {
        _cleanup_(store_closep) Store *s = NULL;
        Job *j = stored_job(env, id);

        *ret = (EndRecord) { .state = j->state, .exit_code = job_run(j)->exit_code };
        job_free(j);
        assert_int_equal(store_open_reader(env->dir, &s), 0);
        assert_int_equal(store_load_charge(s, id, &ret->charge), 0);
        assert_int_equal(store_load_decayed(s, decayed_one, &ret->decayed), 0);
}

static void assert_same_end(const EndRecord *a, const EndRecord *want) {
        assert_int_equal(a->state, want->state);
        assert_int_equal(a->exit_code, want->exit_code);
        assert_int_equal(a->charge.run, want->charge.run);
        assert_int_equal(a->charge.run_usec, want->charge.run_usec);
        assert_int_equal(a->charge.cpu_usec, want->charge.cpu_usec);
        assert_int_equal(a->decayed.n, want->decayed.n);
        for (unsigned i = 0; i < a->decayed.n; i++)
                if (a->decayed.value[i].value != want->decayed.value[i].value ||
                    a->decayed.value[i].stamp != want->decayed.value[i].stamp)
                        fail_msg("fair-share usage %u: %.9g at %" PRIu64 ", want %.9g at %" PRIu64, i,
                                 a->decayed.value[i].value, a->decayed.value[i].stamp, want->decayed.value[i].value,
                                 want->decayed.value[i].stamp);
}

/* A new environment named name with one job submitted, started and running. */
static uint64_t running_job(Env *env, const char *name) {
        uint64_t id;

        env_new(env, name);
        id = submit(env->m);
        assert_int_equal(manager_schedule(env->m), 0);
        assert_true(post(env->m));
        manager_launch_pending(env->m);
        manager_on_job_started(env->m->executor, id, 0, NULL, env->m);
        assert_true(post(env->m));
        assert_int_equal(manager_find_job(env->m, id)->state, JOB_RUNNING);
        return id;
}

/* One run to its end, the end's step under a failure at allocation n (-1: none);
 * from_file: the outcome as the supervisor leaves it, read by the executor (its read is
 * under test too); otherwise handed to manager_on_job_finished() as the executor would.
 * Whether a failure was injected. */
static bool end_once(bool from_file, long n, uint64_t start, EndRecord *ret) {
        Env env;
        uint64_t id;
        JobOutcome o;
        bool injected;
        Job *j;

        id = running_job(&env, "end");
        o = outcome_for(id, start);
        write_outcome(&env, &o);

        oom_arm(n);
        if (from_file)
                (void) executor_scan_outcomes(env.m->executor);
        else
                manager_on_job_finished(env.m->executor, &o, env.m);
        injected = oom_disarm();

        if (post(env.m))
                assert_consistent(&env, id);
        else {
                /* corrald exits: nothing of this iteration was acknowledged, and the
                 * outcome is still there. */
                assert_true(outcome_present(&env, id));
                manager_restart(&env);
        }
        if (outcome_present(&env, id)) {
                /* Not consumed: read again (a restart reads every outcome left), and
                 * recorded then, unless it was already. */
                n_reread++;
                assert_int_equal(executor_scan_outcomes(env.m->executor), 0);
                assert_true(post(env.m));
                assert_consistent(&env, id);
        }
        assert_false(outcome_present(&env, id));
        j = manager_find_job(env.m, id);
        assert_true(job_state_is_final(j->state));
        end_record(&env, id, ret);
        env_done(&env);
        return injected;
}

static void end_case(bool from_file) {
        /* One start for every run: the same charge and usage stamps each time. */
        uint64_t start = (uint64_t) time(NULL) - 600;
        EndRecord want, got;
        unsigned n;

        start_succeeds = true;
        assert_false(end_once(from_file, -1, start, &want));
        assert_int_equal(want.state, JOB_FAILED);
        assert_int_equal(want.exit_code, 3);
        assert_int_equal(want.decayed.n, 2); /* the project "" and the user */
        n_exits = n_reread = 0;
        for (n = 0; n < OOM_STEPS_MAX; n++) {
                bool injected = end_once(from_file, n, start, &got);

                /* Ended once, as without a failure: its state, one charge, the usage. */
                assert_same_end(&got, &want);
                if (!injected)
                        break;
        }
        assert_true(n > 5 && n < OOM_STEPS_MAX);
        print_message("end (%s): %u allocations, %u exits, %u outcomes read again\n",
                      from_file ? "outcome file" : "outcome handed over", n, n_exits, n_reread);
}

static void test_end(void **state) {
        end_case(false);
        end_case(true);
}

/* An outcome of a launch that failed, with its words, read from its file: reading it
 * short of memory (the words are copied) is no damage. Whatever allocation fails, the
 * job ends once, as a failed launch, not as an unreadable record. */
static void test_end_launch_failed_from_file(void **state) {
        unsigned n;

        start_succeeds = true;
        for (n = 0; n < OOM_STEPS_MAX; n++) {
                JobOutcome o = { .launch_errno = ENOENT, .launch_error = (char *) "cannot execute the job's command" };
                Env env;
                uint64_t id;
                bool injected;
                Job *j;

                id = running_job(&env, "end-launch");
                o.id = id;
                write_outcome(&env, &o);

                oom_arm(n);
                (void) executor_scan_outcomes(env.m->executor);
                injected = oom_disarm();
                if (!post(env.m))
                        manager_restart(&env);
                if (outcome_present(&env, id)) {
                        assert_int_equal(executor_scan_outcomes(env.m->executor), 0);
                        assert_true(post(env.m));
                }
                assert_false(outcome_present(&env, id));
                j = stored_job(&env, id);
                assert_int_equal(j->state, JOB_FAILED);
                /* Without its words when copying them failed (manager_job_launch_failed()
                 * still ends it), never with other ones. */
                if (job_run(j)->launch_error && !streq(job_run(j)->launch_error, "cannot execute the job's command"))
                        fail_msg("allocation %u failing: launch error \"%s\"", n, job_run(j)->launch_error);
                job_free(j);
                env_done(&env);
                if (!injected)
                        break;
        }
        assert_true(n > 0 && n < OOM_STEPS_MAX);
}

int main(void) {
        sqlite3_mem_methods mine;
        int r;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pass_start),
                cmocka_unit_test(test_launch),
                cmocka_unit_test(test_end),
                cmocka_unit_test(test_end_launch_failed_from_file),
        };

        log_set_max_level(getenv("CORRAL_TEST_VERBOSE") ? LOG_DEBUG : LOG_CRIT);
        /* Before SQLite initializes itself: its allocations fail on the same count. */
        assert_int_equal(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sqlite_mem), SQLITE_OK);
        mine = sqlite_mem;
        mine.xMalloc = sqlite_malloc;
        mine.xRealloc = sqlite_realloc;
        assert_int_equal(sqlite3_config(SQLITE_CONFIG_MALLOC, &mine), SQLITE_OK);
        r = cmocka_run_group_tests(tests, NULL, NULL);
        shared_free();
        return r;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a queued job costs corrald in memory, without the guest: a manager as corrald
 * runs it (its store in a scratch directory, no executor, bus or socket) takes N jobs
 * through the Submit method as bench/daemon's clients send them (argv /bin/true, /tmp,
 * one CPU, a begin time a day away so every pass considers them), one scheduling pass
 * runs over them, and a second manager loads them back from the store as corrald does
 * at start-up. Prints, per queued job, the heap in use (mallinfo2) and the growth of the
 * resident set at each step (right after a pass, and once idle: corrald gives the pass's
 * memory back when passes stop, manager_sched_trim()), and the sizes of the structures
 * per job. The heap leaves out the request strings' chunks (mapped apart, job.c): the
 * resident set is the figure that counts. Ends with the figure issue 39 asks for: bytes of
 * RSS per queued job once idle (loaded back, as corrald holds a queue after a restart and
 * after its passes stop), what the manager held before any job, and SQLite's share of it
 * all (its page cache fills to its cap as the store grows: a base, not a cost per job);
 * then what 2,000 of them cost more once run and ended, as corrald keeps them a day.
 * Prints figures; never pass/fail. Not run by `meson test`.
 * Usage: bench-memory [N] [DIR] (N default 100000; DIR default a new directory under
 * /tmp, removed afterwards). CORRAL_BENCH_UNIQUE=1: each job its own name, so that no two
 * requests are alike (what jobs share of their requests is then nothing). */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench-util.h"
#include "accounting/accounting.h"
#include "daemon/job-transition.h"
#include "daemon/manager.h"
#include "daemon/methods.h"
#include "daemon/sched-driver.h"
#include "daemon/store.h"
#include "daemon/usage.h"

static SchedNode nodes[2];

static size_t heap_in_use(void) {
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd; /* big arrays are mmap'ed chunks of their own */
}

static size_t rss_bytes(void) {
        unsigned long size = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "re");

        if (f) {
                if (fscanf(f, "%lu %lu", &size, &resident) != 2)
                        resident = 0;
                fclose(f);
        }
        return resident * (size_t) sysconf(_SC_PAGESIZE);
}

static Manager *manager_for_bench(const char *dir) {
        Manager *m = calloc(1, sizeof *m);
        char *err = NULL;

        if (!m || !(m->confdir = strdup(dir)) || !(m->nss = nss_cache_new(&nss_ops_libc))) /* as corrald's */
                return NULL;
        manager_pick_backends(m);
        if (manager_reload(m, &err) < 0) { /* no corral.conf: the defaults */
                fprintf(stderr, "configuration: %s\n", strna(err));
                return NULL;
        }
        if (store_open(dir, &m->store) < 0 || accounting_new(m->store, NULL, m->config, &m->acct) < 0 ||
            !(m->sched = sched_context_new()))
                return NULL;
        /* 2 nodes of 4 CPUs: the guest's size hardly matters to a queue that waits. */
        for (unsigned k = 0; k < 2; k++) {
                nodes[k] = (SchedNode) { .memory = UINT64_C(8) << 30, .speed = 1 };
                for (unsigned c = 0; c < 4; c++)
                        cpu_set_add(&nodes[k].cpus, k * 4 + c);
        }
        m->machine = (SchedMachine) { .nodes = nodes, .n_nodes = 2 };
        m->next_id = 1;
        strcpy(m->hostname, "benchhost");
        return m;
}

typedef struct Mark {
        size_t heap, rss;
} Mark;

static Mark mark(void) {
        return (Mark) { heap_in_use(), rss_bytes() };
}

static double report(const char *what, Mark from, size_t n) {
        Mark now = mark();
        printf("%-44s heap %6.0f B/job, RSS %6.0f B/job (RSS %.1f MB in all)\n", what,
               ((double) now.heap - (double) from.heap) / (double) n,
               ((double) now.rss - (double) from.rss) / (double) n, (double) now.rss / 1e6);
        return ((double) now.rss - (double) from.rss) / (double) n;
}

static int submit_all(const char *dir, size_t n) {
        Peer peer = { .uid = 0, .gid = 0 }; /* bench/daemon's clients run as root */
        char request[256];
        Manager *m;
        Mark base;
        double t0;
        int r;

        m = manager_for_bench(dir);
        if (!m)
                return EXIT_FAILURE;
        uint64_t begin = (uint64_t) time(NULL) + 86400;
        bool unique = getenv("CORRAL_BENCH_UNIQUE");

        snprintf(request, sizeof request,
                 "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\",\"cpus\":1,\"begin_time\":%" PRIu64 "}", begin);

        base = mark();
        t0 = now_sec();
        for (size_t i = 0; i < n; i++) {
                json_object *p, *reply = NULL, *e;

                if (unique) /* each its own name: no two requests alike, sharing's worst case */
                        snprintf(request, sizeof request,
                                 "{\"argv\":[\"/bin/true\"],\"workdir\":\"/tmp\",\"cpus\":1,\"begin_time\":%" PRIu64
                                 ",\"name\":\"job-%zu\"}",
                                 begin, i);
                p = json_tokener_parse(request);

                if (!p || manager_server_ops.dispatch(m, NULL, &peer, CORRAL_METHOD_SUBMIT, p, &reply) < 0 ||
                    !reply || json_object_object_get_ex(reply, "error", &e)) {
                        fprintf(stderr, "submit %zu failed: %s\n", i, reply ? json_object_to_json_string(reply) : "");
                        return EXIT_FAILURE;
                }
                json_object_put(p);
                json_object_put(reply);
                /* corrald commits once per event-loop iteration; here once per thousand. */
                if (i % 1000 == 999 && (r = store_commit(m->store)) < 0)
                        return EXIT_FAILURE;
        }
        if (store_commit(m->store) < 0)
                return EXIT_FAILURE;
        printf("%zu jobs submitted in %.1f s\n", n, now_sec() - t0);
        report("submitted (through Submit):", base, n);
        r = manager_schedule(m);
        if (r < 0) {
                fprintf(stderr, "pass: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        report("after a scheduling pass:", base, n);
        manager_sched_trim(m); /* what corrald does once passes have stopped a while */
        report("idle (passes stopped):", base, n);
        manager_free(m);
        fflush(stdout);
        return EXIT_SUCCESS;
}

int main(int argc, char **argv) {
        size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 100000;
        char tmpl[] = "/tmp/bench-memory.XXXXXX", *dir = argc > 2 ? argv[2] : NULL;
        Manager *m2;
        Mark after_load;
        int64_t sqlite_before;
        int r;

        if (n == 0)
                return EXIT_FAILURE;
        if (!dir && !(dir = mkdtemp(tmpl))) {
                perror("mkdtemp");
                return EXIT_FAILURE;
        }
        printf("sizeof(Job) %zu (a started job's JobRun %zu more), sizeof(SubmitRequest) %zu, sizeof(SchedJob) %zu, "
               "sizeof(SchedAllocation) %zu\n",
               sizeof(Job), sizeof(JobRun), sizeof(SubmitRequest), sizeof(SchedJob), sizeof(SchedAllocation));
        /* Each step in a process of its own, so that one's freed heap is not the next's. */
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
                return EXIT_FAILURE;
        if (pid == 0)
                _exit(submit_all(dir, n));
        if (waitpid(pid, &r, 0) < 0 || !WIFEXITED(r) || WEXITSTATUS(r) != 0)
                return EXIT_FAILURE;

        /* A restart: the same jobs loaded from the store. */
        m2 = manager_for_bench(dir);
        if (!m2)
                return EXIT_FAILURE;
        after_load = mark();
        sqlite_before = sqlite3_memory_used();
        if (manager_load_jobs(m2) < 0) {
                fprintf(stderr, "load failed\n");
                return EXIT_FAILURE;
        }
        report("loaded from the store (restart):", after_load, n);
        if (manager_schedule(m2) < 0)
                return EXIT_FAILURE;
        report("after a scheduling pass:", after_load, n);
        manager_sched_trim(m2);
        double per_job = report("idle (passes stopped):", after_load, n);
        Mark idle = mark();

        /* Finished jobs: corrald keeps them a day, each with its run and, for the record,
         * its allocation. bench/daemon's queue is filled after 2,000 jobs have run (its
         * end-to-end phases): their cost is in its figure too. Each ran on one CPU of 8
         * as a pass would have put it. */
        size_t n_done = n < 2000 ? n : 2000;
        for (size_t i = 0; i < n_done; i++) {
                Job *j = m2->jobs[i];
                unsigned cpu = (unsigned) (i % 8);

                if (manager_job_transition(m2, j, JOB_EVENT_START, JOB_RUNNING, NULL) < 0 ||
                    !(j->run->alloc = calloc(1, sizeof(SchedAllocation))))
                        return EXIT_FAILURE;
                cpu_set_add(&job_alloc(j)->cpus, cpu);
                job_alloc(j)->node_mask = UINT64_C(1) << (cpu / 4);
                job_alloc(j)->mem[cpu / 4] = UINT64_C(1) << 20;
                job_run_ensure(j)->exit_code = 0;
                if (manager_job_transition(m2, j, JOB_EVENT_END, JOB_COMPLETED, NULL) < 0)
                        return EXIT_FAILURE;
        }
        if (store_commit(m2->store) < 0)
                return EXIT_FAILURE;
        printf("%-44s heap %6.0f B/job, RSS %6.0f B/job more than queued (RSS %.1f MB in all)\n",
               "of them run and ended (kept a day):", ((double) heap_in_use() - (double) idle.heap) / (double) n_done,
               ((double) rss_bytes() - (double) idle.rss) / (double) n_done, (double) rss_bytes() / 1e6);

        printf("bytes per queued job, idle: %.0f (sizeof(Job) %zu, the job table's two pointers %zu); "
               "%zu queued: RSS %.1f MB, of which %.1f MB before any job; SQLite's heap grew %.1f MB of it "
               "(%.0f B/job: its page cache, up to its cap)\n",
               per_job, sizeof(Job), 2 * sizeof(Job *), n, (double) idle.rss / 1e6, (double) after_load.rss / 1e6,
               (double) (sqlite3_memory_used() - sqlite_before) / 1e6,
               (double) (sqlite3_memory_used() - sqlite_before) / (double) n);
        manager_free(m2);

        if (argc <= 2) {
                char cmd[64 + sizeof tmpl];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
                if (system(cmd) != 0)
                        return EXIT_FAILURE;
        }
        return EXIT_SUCCESS;
}

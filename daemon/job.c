/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <assert.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "interactive-job.h"
#include "job.h"
#include "protocol.h"
#include "strv.h"

/* Jobs come from slabs: a long queue's records sit together instead of between the
 * short-lived allocations of request parsing, which otherwise leave the heap half holes
 * (measured: 955 bytes of RSS per loaded job for 550 in use). A slab and malloc's header
 * fill 256 KiB, no more: a slab malloc maps on its own takes whole pages, and one of
 * exactly 256 KiB would take a page more for its header (4 bytes a job). */
#define JOB_SLAB ((256U * 1024U - 64U) / sizeof(Job))
static Job *job_free_list;

/* The jobs' JobShared blocks come from 64 KiB chunks too, each freed when the last block
 * in it is: no small long-lived allocation is left between the parser's. A chunk is
 * mapped at a multiple of its size, so that a block finds its chunk from its own address
 * and keeps no pointer to it. */
#define STR_CHUNK_SIZE (64U * 1024U)
typedef struct StrChunk {
        size_t used, live;
        char data[];
} StrChunk;
static StrChunk *str_chunk_current;

static StrChunk *str_chunk_of(const char *p) {
        return (StrChunk *) ((uintptr_t) p & ~(uintptr_t) (STR_CHUNK_SIZE - 1));
}

static StrChunk *str_chunk_new(void) {
        /* Twice the size mapped, the ends around an aligned chunk unmapped again. */
        uint8_t *p = mmap(NULL, 2 * STR_CHUNK_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        uintptr_t start;

        if (p == MAP_FAILED)
                return NULL;
        start = ((uintptr_t) p + STR_CHUNK_SIZE - 1) & ~(uintptr_t) (STR_CHUNK_SIZE - 1);
        if (start > (uintptr_t) p)
                (void) munmap(p, start - (uintptr_t) p);
        if ((uintptr_t) p + 2 * STR_CHUNK_SIZE > start + STR_CHUNK_SIZE)
                (void) munmap((void *) (start + STR_CHUNK_SIZE), (uintptr_t) p + 2 * STR_CHUNK_SIZE - start - STR_CHUNK_SIZE);
        return (StrChunk *) start;
}

static void str_chunk_unmap(StrChunk *c) {
        (void) munmap(c, STR_CHUNK_SIZE);
}

/* *ret_alone: the block is big and was allocated on its own (it is rare). */
static char *str_chunk_alloc(size_t n, bool *ret_alone) {
        StrChunk *c = str_chunk_current;
        char *p;

        *ret_alone = n > (STR_CHUNK_SIZE - sizeof(StrChunk)) / 4;
        if (*ret_alone)
                return malloc(n);
        n = (n + _Alignof(JobShared) - 1) & ~(size_t) (_Alignof(JobShared) - 1); /* the blocks keep numbers */
        if (!c || c->used + n > STR_CHUNK_SIZE - sizeof(StrChunk)) {
                if (c && c->live == 0)
                        str_chunk_unmap(c);
                c = str_chunk_new();
                if (!c)
                        return NULL;
                c->used = c->live = 0;
                str_chunk_current = c;
        }
        p = c->data + c->used;
        c->used += n;
        c->live++;
        return p;
}

/* n: the size it was allocated with. */
static void str_chunk_free(char *p, size_t n, bool alone) {
        StrChunk *c;

        if (alone) {
                free(p);
                return;
        }
        c = str_chunk_of(p);
        /* The block made last goes back to the chunk: a probe's (Submit makes one and
         * frees it before it makes the job) would otherwise hold its bytes as long as the
         * chunk lives. */
        n = (n + _Alignof(JobShared) - 1) & ~(size_t) (_Alignof(JobShared) - 1);
        if (c == str_chunk_current && p + n == c->data + c->used)
                c->used -= n;
        if (--c->live > 0)
                return;
        if (c == str_chunk_current)
                c->used = 0;
        else
                str_chunk_unmap(c);
}

const JobRun job_run_none = { .exit_code = -1 };

JobRun *job_run_ensure(Job *j) {
        if (!j->run) {
                j->run = new(JobRun, 1);
                if (j->run)
                        *j->run = job_run_none;
        }
        return j->run;
}

int job_take_launch_error(Job *j, char *words) {
        JobRun *run = job_run_ensure(j);

        if (!run) {
                free(words);
                return -ENOMEM;
        }
        free(run->launch_error);
        run->launch_error = words;
        return 0;
}

void job_run_forget(Job *j) {
        if (!j->run)
                return;
        job_alloc_free(j->run->alloc);
        free(j->run->launch_error);
        j->run = mfree(j->run);
}

bool job_run_is_empty(const JobRun *r) {
        /* Field by field (memcmp() would compare the padding too), every field, stored or
         * not. */
        return !r ||
               (!r->alloc && r->usage.cpu_usec == 0 && r->usage.memory_peak == 0 && r->usage.io_read_bytes == 0 &&
                r->usage.io_write_bytes == 0 && r->usage.tasks_peak == 0 && r->suspended_usec == 0 &&
                r->suspend_start == 0 && !r->launch_error && r->preempted_by == 0 && r->resident_memory == 0 &&
                r->last_resume == 0 && r->preempt_act == PREEMPT_ACT_NONE && !r->preempt_moved &&
                !r->preempt_swap_off && !r->reclaimed && r->exit_code == job_run_none.exit_code &&
                r->exit_signal == 0);
}

/* The shared allocations (job_alloc_share()): an open-addressing table of them by their
 * content's hash, the allocation the first member, so that an entry's address is its
 * allocation's. An allocation is shared if the entry its content leads to is at its
 * address: nothing writes one, so its content still leads there. */
typedef struct SharedAlloc {
        SchedAllocation a;
        uint64_t hash;
        size_t refs;
} SharedAlloc;
static SharedAlloc **shared_allocs;
static size_t n_shared_allocs, shared_allocs_size; /* a power of two, or 0 */

static uint64_t alloc_hash(const SchedAllocation *a) {
        /* Field by field, as alloc_equal() compares: CpuSet has padding, and its bounds
         * may hold zero words (cpu_set_del() leaves them). */
        uint64_t h = UINT64_C(0xcbf29ce484222325);

#define MIX(v) (h = (h ^ (v)) * UINT64_C(0x100000001b3), h ^= h >> 29)
        for (unsigned w = a->cpus.lo; w < a->cpus.hi; w++)
                if (a->cpus.bits[w]) {
                        MIX(w);
                        MIX(a->cpus.bits[w]);
                }
        MIX(a->node_mask);
        for (size_t k = 0; k < ELEMENTSOF(a->mem); k++)
                MIX(a->mem[k]);
        MIX(a->gpu_mask);
        MIX(a->shards);
        MIX(a->shards_of);
#undef MIX
        return h;
}

static bool alloc_equal(const SchedAllocation *a, const SchedAllocation *b) {
        return cpu_set_equal(&a->cpus, &b->cpus) && a->node_mask == b->node_mask && a->gpu_mask == b->gpu_mask &&
               a->shards == b->shards && a->shards_of == b->shards_of &&
               memcmp(a->mem, b->mem, sizeof a->mem) == 0;
}

/* The slot of the entry equal to a (hash h), or the empty slot where it would go. */
static size_t shared_alloc_slot(const SchedAllocation *a, uint64_t h) {
        size_t mask = shared_allocs_size - 1, i = (size_t) h & mask;

        while (shared_allocs[i] && (shared_allocs[i]->hash != h || !alloc_equal(&shared_allocs[i]->a, a)))
                i = (i + 1) & mask;
        return i;
}

static int shared_allocs_grow(void) {
        size_t size = shared_allocs_size ? 2 * shared_allocs_size : 64;
        SharedAlloc **old = shared_allocs;
        size_t old_size = shared_allocs_size;

        shared_allocs = new0(SharedAlloc *, size);
        if (!shared_allocs) {
                shared_allocs = old;
                return -ENOMEM;
        }
        shared_allocs_size = size;
        for (size_t i = 0; i < old_size; i++)
                if (old[i])
                        shared_allocs[shared_alloc_slot(&old[i]->a, old[i]->hash)] = old[i];
        free(old);
        return 0;
}

SchedAllocation *job_alloc_share(SchedAllocation *a) {
        uint64_t h = alloc_hash(a);
        SharedAlloc *e;
        size_t i;

        if ((n_shared_allocs + 1) * 2 > shared_allocs_size && shared_allocs_grow() < 0)
                return a;
        i = shared_alloc_slot(a, h);
        e = shared_allocs[i];
        if (e) {
                if (&e->a == a)
                        return a; /* shared already */
                e->refs++;
                free(a);
                return &e->a;
        }
        e = new0(SharedAlloc, 1);
        if (!e)
                return a;
        /* A copy of each field (not of the padding, which alloc_equal() skips anyway). */
        e->a.cpus = a->cpus;
        e->a.node_mask = a->node_mask;
        memcpy(e->a.mem, a->mem, sizeof a->mem);
        e->a.gpu_mask = a->gpu_mask;
        e->a.shards = a->shards;
        e->a.shards_of = a->shards_of;
        e->hash = h;
        e->refs = 1;
        shared_allocs[i] = e;
        n_shared_allocs++;
        free(a);
        return &e->a;
}

SchedAllocation *job_alloc_free(SchedAllocation *a) {
        size_t i, j, mask;
        SharedAlloc *e;

        if (!a)
                return NULL;
        if (n_shared_allocs == 0)
                return mfree(a);
        i = shared_alloc_slot(a, alloc_hash(a));
        e = shared_allocs[i];
        if (!e || &e->a != a)
                return mfree(a); /* the job's own */
        if (--e->refs > 0)
                return NULL;
        free(e);
        n_shared_allocs--;
        /* Linear probing's deletion: the entries after it that it displaced move back. */
        mask = shared_allocs_size - 1;
        shared_allocs[i] = NULL;
        for (j = (i + 1) & mask; shared_allocs[j]; j = (j + 1) & mask) {
                size_t home = (size_t) shared_allocs[j]->hash & mask;
                /* Moves back unless its home lies cyclically in (i, j]. */
                if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
                        shared_allocs[i] = shared_allocs[j];
                        shared_allocs[j] = NULL;
                        i = j;
                }
        }
        if (n_shared_allocs == 0) {
                shared_allocs = mfree(shared_allocs);
                shared_allocs_size = 0;
        }
        return NULL;
}

/* The interactive jobs' Interactive, by job (jobs do not move: they live in the slabs).
 * A handful at most: a walk finds one. */
typedef struct JobInteractive {
        const Job *job;
        Interactive *it;
} JobInteractive;
static JobInteractive *job_interactives;
static size_t n_job_interactives, allocated_job_interactives;

static JobInteractive *job_interactive_slot(const Job *j) {
        for (size_t i = 0; i < n_job_interactives; i++)
                if (job_interactives[i].job == j)
                        return &job_interactives[i];
        return NULL;
}

Interactive *job_interactive_find(const Job *j) {
        JobInteractive *s = job_interactive_slot(j);

        return s ? s->it : NULL;
}

int job_set_interactive(Job *j, Interactive *it) {
        JobInteractive *s = j->has_interactive ? job_interactive_slot(j) : NULL;

        if (s) {
                if (s->it == it)
                        return 0;
                interactive_free(s->it);
                if (it) {
                        s->it = it;
                        return 0;
                }
                *s = job_interactives[--n_job_interactives];
                if (n_job_interactives == 0) {
                        job_interactives = mfree(job_interactives);
                        allocated_job_interactives = 0;
                }
                j->has_interactive = false;
                return 0;
        }
        if (!it)
                return 0;
        if (!GREEDY_REALLOC(job_interactives, allocated_job_interactives, n_job_interactives + 1)) {
                interactive_free(it);
                return -ENOMEM;
        }
        job_interactives[n_job_interactives++] = (JobInteractive) { .job = j, .it = it };
        j->has_interactive = true;
        return 0;
}

/* The jobs' borrowed complete requests, by job: those of one Submit, one after the other
 * (an array's tasks each lend it in turn), so a walk finds one. */
typedef struct JobSubmitted {
        const Job *job;
        const SubmitRequest *req;
} JobSubmitted;
static JobSubmitted *job_submitteds;
static size_t n_job_submitteds, allocated_job_submitteds;

static JobSubmitted *job_submitted_slot(const Job *j) {
        for (size_t i = n_job_submitteds; i > 0; i--)
                if (job_submitteds[i - 1].job == j)
                        return &job_submitteds[i - 1];
        return NULL;
}

const SubmitRequest *job_submitted_find(const Job *j) {
        JobSubmitted *s = job_submitted_slot(j);

        return s ? s->req : NULL;
}

int job_set_submitted(Job *j, const SubmitRequest *req) {
        JobSubmitted *s = j->has_submitted ? job_submitted_slot(j) : NULL;

        if (s) {
                if (req) {
                        s->req = req;
                        return 0;
                }
                *s = job_submitteds[--n_job_submitteds];
                if (n_job_submitteds == 0) {
                        job_submitteds = mfree(job_submitteds);
                        allocated_job_submitteds = 0;
                }
                j->has_submitted = false;
                return 0;
        }
        if (!req)
                return 0;
        if (!GREEDY_REALLOC(job_submitteds, allocated_job_submitteds, n_job_submitteds + 1))
                return -ENOMEM;
        job_submitteds[n_job_submitteds++] = (JobSubmitted) { .job = j, .req = req };
        j->has_submitted = true;
        return 0;
}

Job *job_new(void) {
        Job *j;

        if (!job_free_list) {
                Job *chunk = new(Job, JOB_SLAB);
                if (!chunk)
                        return NULL;
                for (size_t i = 0; i < JOB_SLAB; i++) {
                        *(Job **) &chunk[i] = job_free_list;
                        job_free_list = &chunk[i];
                }
        }
        j = job_free_list;
        job_free_list = *(Job **) j;
        *j = (Job) { .state = JOB_QUEUED };
        return j;
}

const JobShared job_shared_none = {};

/* The JobShared blocks made last, to share with the next equal request: the tasks of an
 * array, one after the other, and the submits of a script's loop, even with a few
 * clients' submits between them (or their jobs loaded back from the store, in id order).
 * A handful, compared in a walk: no table of all blocks, which would cost more per job
 * than sharing saves when every request differs. Holds no reference: a block leaves it
 * when its last job lets go of it. */
#define RECENT_SHARED 16
static JobShared *recent_shared[RECENT_SHARED];
static unsigned recent_shared_next;

static void job_shared_unref(const JobShared *c) {
        JobShared *sh = (JobShared *) c;

        if (!sh || --sh->refs > 0)
                return;
        for (unsigned k = 0; k < RECENT_SHARED; k++)
                if (recent_shared[k] == sh)
                        recent_shared[k] = NULL;
        str_chunk_free((char *) sh, sizeof(JobShared) + sh->size, sh->alone);
}

static void job_request_done(Job *j) {
        free(j->req.dependencies);
        job_shared_unref(j->shared);
        j->shared = NULL;
        j->req = (JobRequest) {};
}

Job *job_free(Job *j) {
        if (!j)
                return NULL;
        (void) job_set_interactive(j, NULL);
        (void) job_set_submitted(j, NULL);
        job_run_forget(j);
        job_request_done(j);
        *(Job **) j = job_free_list;
        job_free_list = j;
        return NULL;
}

int job_set_reason(Job *j, const char *reason) {
        const char *was = job_reason(j);
        uint32_t r;

        /* Every waiting job's after every pass, mostly what it was: a compare, no lookup. */
        if (was == reason || (was && reason && streq(was, reason)))
                return 0;
        r = intern_id(reason);
        if (reason && !r)
                return -ENOMEM;
        j->reason = r;
        return 1;
}

static int dup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* Whether sh holds what key does, strings from[] (each NULL or of length len[] - 1). */
static bool job_shared_equal(const JobShared *sh, const JobShared *key, const char *const *from, const size_t *len) {
        if (sh->memory != key->memory || sh->walltime_sec != key->walltime_sec || sh->begin_time != key->begin_time ||
            sh->array.max_concurrent != key->array.max_concurrent || sh->nice != key->nice ||
            sh->mail_events != key->mail_events || sh->size != key->size)
                return false;
        for (size_t i = 0; i < _JOB_STRING_MAX; i++) {
                if (sh->str[i] != key->str[i])
                        return false;
                if (from[i] && memcmp(sh->data + sh->str[i] - 1, from[i], len[i]) != 0)
                        return false;
        }
        return true;
}

int job_set_request(Job *j, const SubmitRequest *req) {
        /* The strings go into the block, allocated after the request's parse: a few small
         * allocations per job between the parser's short-lived ones fragment the heap of a
         * 100,000-job queue. */
        const char *from[_JOB_STRING_MAX] = {
                [JOB_NAME] = req->name,
                [JOB_WORKDIR] = req->workdir,
                [JOB_STDIN_PATH] = req->stdin_path,
                [JOB_STDOUT_PATH] = req->stdout_path,
                [JOB_STDERR_PATH] = req->stderr_path,
                [JOB_GPU_TYPE] = req->gpu_type,
                [JOB_CONSTRAINT] = req->constraint,
                [JOB_MAIL_USER] = req->mail_user,
        };
        size_t total = 0, len[_JOB_STRING_MAX] = {};
        JobShared key, *sh = NULL;
        bool alone;

        _Static_assert((int) DEPENDENCY_AFTER == (int) SCHED_DEP_AFTER &&
                               (int) DEPENDENCY_AFTERANY == (int) SCHED_DEP_AFTERANY &&
                               (int) DEPENDENCY_AFTEROK == (int) SCHED_DEP_AFTEROK &&
                               (int) DEPENDENCY_AFTERNOTOK == (int) SCHED_DEP_AFTERNOTOK,
                       "a dependency's type is kept as sched/ takes it");
        /* What the decoder lets through fits the 16-bit offsets with room to spare. */
        _Static_assert(CORRAL_NAME_LENGTH_MAX + 4 * (CORRAL_PATH_LENGTH_MAX + 1) + CORRAL_GPU_TYPE_LENGTH_MAX +
                                       CORRAL_CONSTRAINT_LENGTH_MAX + CORRAL_MAIL_USER_LENGTH_MAX + 8 <=
                               JOB_PACKED_MAX,
                       "the packed block's offsets are 16 bits");
        /* What the decoder lets through fits JobRequest's and JobShared's narrow members. */
        _Static_assert(CORRAL_CPUS_MAX <= UINT16_MAX && CORRAL_GPUS_MAX <= UINT8_MAX &&
                               CORRAL_NICE_MIN >= INT16_MIN && CORRAL_NICE_MAX <= INT16_MAX &&
                               (MAIL_ALL | MAIL_ARRAY_TASKS | MAIL_TIME_LIMITS) <= UINT16_MAX,
                       "JobRequest's members hold what the decoder lets through");
        job_request_done(j);
        /* Never truncated: only what bypassed the decoder could be beyond them. */
        _Static_assert(CORRAL_SHARDS_MAX <= UINT16_MAX, "Job.req_shards holds what the decoder lets through");
        if (req->cpus > CORRAL_CPUS_MAX || req->gpus > CORRAL_GPUS_MAX || req->shards > CORRAL_SHARDS_MAX ||
            req->nice < CORRAL_NICE_MIN ||
            req->nice > CORRAL_NICE_MAX || req->mail_events > UINT16_MAX)
                return -ERANGE;
        for (size_t i = 0; i < _JOB_STRING_MAX; i++)
                if (from[i]) {
                        len[i] = strlen(from[i]) + 1;
                        total += len[i];
                }
        if (total > JOB_PACKED_MAX)
                return -E2BIG;

        key = (JobShared) {
                .memory = req->memory,
                .walltime_sec = req->walltime_sec,
                .begin_time = req->begin_time,
                .array.max_concurrent = req->array.max_concurrent,
                .nice = (int16_t) req->nice,
                .mail_events = (uint16_t) req->mail_events,
                .size = (uint16_t) total,
        };
        for (size_t i = 0, o = 0; i < _JOB_STRING_MAX; i++)
                if (from[i]) {
                        key.str[i] = (uint16_t) (o + 1);
                        o += len[i];
                }
        for (unsigned k = 0; k < RECENT_SHARED && !sh; k++)
                if (recent_shared[k] && recent_shared[k]->refs < UINT32_MAX &&
                    job_shared_equal(recent_shared[k], &key, from, len))
                        sh = recent_shared[k];
        if (!sh) {
                sh = (JobShared *) str_chunk_alloc(sizeof(JobShared) + total, &alone);
                if (!sh)
                        return -ENOMEM;
                *sh = key;
                sh->alone = alone;
                for (size_t i = 0; i < _JOB_STRING_MAX; i++)
                        if (from[i])
                                memcpy(sh->data + sh->str[i] - 1, from[i], len[i]);
                if (!alone) {
                        /* An empty slot first (a probe's, freed): round the slots only
                         * when all are taken, so that probes evict nothing. */
                        unsigned k = 0;
                        while (k < RECENT_SHARED && recent_shared[k])
                                k++;
                        if (k == RECENT_SHARED) {
                                k = recent_shared_next;
                                recent_shared_next = (recent_shared_next + 1) % RECENT_SHARED;
                        }
                        recent_shared[k] = sh;
                }
        }
        sh->refs++;
        j->shared = sh;

        j->has_script = j->has_script || req->script;
        j->req = (JobRequest) {
                .cpus = (uint16_t) req->cpus,
                .gpus = (uint8_t) req->gpus,
                .gpu_binding = req->gpu_binding,
                .exclusive = req->exclusive,
                .interactive = req->interactive,
        };
        j->req_shards = (uint16_t) req->shards;
        if (req->n_dependencies > 0) {
                j->req.dependencies = new(SchedDep, req->n_dependencies);
                if (!j->req.dependencies) {
                        job_request_done(j);
                        return -ENOMEM;
                }
                for (size_t k = 0; k < req->n_dependencies; k++)
                        j->req.dependencies[k] = (SchedDep) { .job_id = req->dependencies[k].job_id,
                                                              .type = (SchedDepType) req->dependencies[k].type };
                j->req.n_dependencies = (uint32_t) req->n_dependencies;
        }
        return 0;
}

int job_to_info(const Job *j, bool details, const SubmitRequest *full, const char *hostname, JobInfo *ret) {
        JobInfo i = JOB_INFO_INIT;
        int r = 0;

        i.id = j->id;
        i.uid = j->uid;
        i.cpus = j->req.cpus ?: 1;
        i.memory = job_shared(j)->memory;
        i.walltime_sec = job_shared(j)->walltime_sec;
        i.nice = job_shared(j)->nice;
        i.submit_time = j->submit_time;
        i.start_time = j->start_time;
        i.end_time = j->end_time;
        i.exit_code = job_run(j)->exit_code;
        i.exit_signal = job_run(j)->exit_signal;
        i.array_job_id = j->array_job_id;
        i.array_task_id = j->array_task_id;
        i.interactive = j->req.interactive;
        r |= dup_or_null(job_str(j, JOB_NAME), &i.name);
        r |= dup_or_null(job_user(j), &i.user);
        r |= dup_or_null(job_project(j), &i.project);
        r |= dup_or_null(job_queue(j), &i.queue);
        r |= dup_or_null(job_state_to_string(j->state), &i.state);
        if (details && job_run(j)->launch_error) {
                if (asprintf(&i.reason, "%s: %s", strempty(job_reason(j)), job_run(j)->launch_error) < 0)
                        r = -ENOMEM, i.reason = NULL;
        } else if (j->limit_value && job_reason(j) && streq(job_reason(j), "Grant")) {
                /* e.g. "Grant (used 1234.50 of 1000 SU)": its project's grant is spent. */
                if (asprintf(&i.reason, "Grant (used %.2f of %" PRIu64 " SU)",
                             (double) j->limit_wanted / JOB_GRANT_SCALE,
                             j->limit_value / JOB_GRANT_SCALE) < 0)
                        r = -ENOMEM, i.reason = NULL;
        } else if (j->limit_value && j->limit_wanted) {
                /* e.g. "MaxPSSoft (98696 > 72000)": what the job would make of the limit. */
                if (asprintf(&i.reason, "%s (%" PRIu64 " > %" PRIu64 ")", strempty(job_reason(j)), j->limit_wanted,
                             j->limit_value) < 0)
                        r = -ENOMEM, i.reason = NULL;
        } else if (j->limit_value) {
                if (asprintf(&i.reason, "%s (%" PRIu64 ")", strempty(job_reason(j)), j->limit_value) < 0)
                        r = -ENOMEM, i.reason = NULL;
        } else
                r |= dup_or_null(job_reason(j), &i.reason);
        i.gpus = j->req.gpus;
        i.shards = j->req_shards;
        r |= dup_or_null(job_str(j, JOB_GPU_TYPE), &i.gpu_type);
        r |= dup_or_null(job_str(j, JOB_CONSTRAINT), &i.constraint);
        if (job_alloc(j) && job_alloc(j)->gpu_mask) {
                /* The machine's GPU indexes, as `corral info` numbers them: "1,3". */
                char buf[SCHED_GPUS_MAX * 3 + 1];
                size_t k = 0;
                for (uint64_t mask = job_alloc(j)->gpu_mask; mask; mask &= mask - 1)
                        k += (size_t) snprintf(buf + k, sizeof buf - k, "%s%d", k > 0 ? "," : "",
                                               __builtin_ctzll(mask));
                r |= dup_or_null(buf, &i.gpus_allocated);
        }
        if (job_alloc(j) && !cpu_set_is_empty(&job_alloc(j)->cpus)) {
                r |= dup_or_null(hostname, &i.node);
                i.cpus_allocated = cpu_set_format(&job_alloc(j)->cpus);
                if (!i.cpus_allocated)
                        r = -ENOMEM;
        }
        if (details) {
                i.has_details = true;
                if (full && full->argv && !(i.argv = strv_copy(full->argv)))
                        r = -ENOMEM;
                i.has_script = j->has_script || (full && full->script);
                if (full && full->env && !(i.env = strv_copy(full->env)))
                        r = -ENOMEM;
                r |= dup_or_null(job_str(j, JOB_WORKDIR), &i.workdir);
                r |= dup_or_null(job_str(j, JOB_STDIN_PATH), &i.stdin_path);
                r |= dup_or_null(job_str(j, JOB_STDOUT_PATH), &i.stdout_path);
                r |= dup_or_null(job_str(j, JOB_STDERR_PATH), &i.stderr_path);
                r |= dup_or_null(full ? full->comment : NULL, &i.comment);
                i.usage = job_run(j)->usage;
        }
        if (r < 0) {
                job_info_done(&i);
                return -ENOMEM;
        }
        *ret = i;
        return 0;
}

/* Slurm's filename patterns: %j job id, %x name, %u user, %A array job, %a task, %% a %.
 * Every piece goes through one bounded append: the name and the pattern are the user's,
 * so the result is checked against PATH_MAX instead of trusted to fit a guess. */
static int append(char *buf, size_t *n, const char *s, size_t l) {
        if (l > PATH_MAX - 1 - *n)
                return -ENAMETOOLONG;
        memcpy(buf + *n, s, l);
        *n += l;
        return 0;
}

int job_expand_path(const Job *j, const char *pattern, char **ret) {
        _cleanup_free_ char *out = NULL;
        size_t n = 0;
        int r;

        assert(j);
        assert(ret);

        if (!pattern) {
                *ret = NULL;
                return 0;
        }
        out = malloc(PATH_MAX);
        if (!out)
                return -ENOMEM;
        for (const char *p = pattern; *p; p++) {
                char num[32];
                const char *s = num;
                size_t l;

                if (*p != '%' || !p[1]) {
                        s = p, l = 1;
                } else {
                        p++;
                        switch (*p) {
                        case 'j': l = (size_t) snprintf(num, sizeof num, "%" PRIu64, j->id); break;
                        case 'x': s = strempty(job_str(j, JOB_NAME)), l = strnlen(s, CORRAL_NAME_LENGTH_MAX); break;
                        case 'u': s = strempty(job_user(j)), l = strnlen(s, CORRAL_IDENT_LENGTH_MAX); break;
                        case 'A':
                                l = (size_t) snprintf(num, sizeof num, "%" PRIu64, j->array_job_id ?: j->id);
                                break;
                        case 'a': l = (size_t) snprintf(num, sizeof num, "%" PRIu32, j->array_task_id); break;
                        case '%': s = "%", l = 1; break;
                        default: s = p - 1, l = 2; break; /* unknown: kept as written */
                        }
                }
                r = append(out, &n, s, l);
                if (r < 0)
                        return r;
        }
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once

/* The scheduling core: a pure function from (jobs, machine, now) to decisions.
 *
 * No syscalls, no clock, no logging, no globals: the daemon calls sched_pass() with the
 * real time and applies the decisions; corral-sim calls it with virtual time. Two calls
 * with equal inputs on equal contexts give equal outputs (only "conservative" keeps
 * anything in the context: its reservations).
 *
 * One pass:
 *   1. every pending job is classified: Held, Dependency, DependencyNeverSatisfied,
 *      BeginTime, TooBig, TimeLimit make it ineligible (it neither starts nor blocks);
 *   2. the eligible ones are ordered by priority (SchedPriorityOps), ties by submit time
 *      then id;
 *   2b. preemption, if enabled or if jobs a pass suspended wait: resumptions and
 *      suspensions (SchedPreempt);
 *   3. the policy (SchedPolicyOps: "fcfs", "easy", "conservative") starts what it may now
 *      and reserves/estimates the rest.
 *
 * Typical use:
 *
 *         _cleanup_(sched_context_freep) SchedContext *ctx = sched_context_new();
 *         SchedConfig cfg = SCHED_CONFIG_DEFAULT;
 *         SchedResult res;
 *         r = sched_pass(ctx, &cfg, &machine, jobs, n_jobs, now, &res);
 *         for (size_t i = 0; i < res.n_decisions; i++)
 *                 start jobs[res.decisions[i].job_index] on res.decisions[i].alloc ...
 *
 * The result's arrays live in ctx and stay valid until the next pass or the free. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "macro.h"

/* NUMA nodes of one machine; node masks are 64-bit. */
#define SCHED_NODES_MAX 64

/* GPUs (and other accelerators the daemon schedules like them) of one machine; GPU
 * masks are 64-bit, bit g: SchedMachine.gpus[g]. At most SCHED_GPUS_NODE_MAX of them on
 * one NUMA node (those of no known node count on the node with fewest): a pass keeps a
 * node's free GPUs in 32 bits. */
#define SCHED_GPUS_MAX 64
#define SCHED_GPUS_NODE_MAX 32

/* A walltime without limit, and an estimated start that is unknown or never. */
#define SCHED_TIME_INFINITY UINT64_MAX

/* The limit a job runs under: requested, else the queue's default, else the queue's
 * maximum, else SCHED_TIME_INFINITY. */
static inline uint64_t sched_effective_walltime(uint64_t requested, uint64_t dflt, uint64_t max) {
        if (requested != 0 && requested != SCHED_TIME_INFINITY)
                return requested;
        if (dflt)
                return dflt;
        return max ?: SCHED_TIME_INFINITY;
}

/* One NUMA node: its CPUs (real CPU ids), its memory and a relative speed figure (any
 * unit, higher is faster; only compared between nodes). */
typedef struct SchedNode {
        CpuSet cpus;
        uint64_t memory;
        uint32_t speed;
} SchedNode;

/* One GPU: the NUMA node it is attached to (an index into SchedMachine.nodes, as its
 * PCI device's numa_node maps there; -1: unknown, it is local to no node). */
typedef struct SchedGpu {
        int node;
        bool offline; /* given to nobody (a card gone, hidden or of unknown identity): its
                       * index stays so that a job holding it keeps it */
        /* Slurm's shards: up to this many shards of it may be given to jobs that want
         * shards (SchedJob.shards), several jobs at once; 0: whole only. */
        uint16_t shards;
        /* Bit h: this GPU and gpus[h] are joined by NVLink (directly or through an
         * NVSwitch), both ways. A job wanting several GPUs gets linked ones where it has a
         * choice, a job wanting one the least linked; all 0: the lowest free ones. */
        uint64_t links;
} SchedGpu;

typedef struct SchedMachine {
        const SchedNode *nodes;
        size_t n_nodes; /* 1..SCHED_NODES_MAX; node CPU sets must not overlap */
        const SchedGpu *gpus;
        size_t n_gpus;  /* 0..SCHED_GPUS_MAX; each node -1..n_nodes-1, else -EINVAL */
        /* Bit g: gpus[g] is in use outside the scheduler (a process in no job): given to no
         * job this pass and never released in its plans, but still the machine's, so a job
         * that needs it waits rather than being too big. */
        uint64_t gpus_busy;
} SchedMachine;

/* How GPUs are scheduled:
 *  - a GPU is never given to two jobs: RUNNING and SUSPENDED jobs hold their gpu_mask
 *    (a frozen job keeps its GPU memory), preempted ones too; a RESUME gives a job back
 *    exactly its gpu_mask, and on other CPUs only near them under gpu_binding;
 *  - preemption suspends jobs for CPUs only: a preemptor that needs GPUs held by others
 *    waits until they end, whatever it could suspend;
 *  - placement prefers one NUMA node with the CPUs, memory and GPUs (of those whose own
 *    free GPUs suffice, the one with the fewest: best fit), then several nodes, those
 *    with the most free GPUs first, each node that gives CPUs giving a GPU too; only
 *    then (not under gpu_binding) CPUs anywhere with GPUs near them where possible. A
 *    GPU of no known node (SchedGpu.node -1) is local to none and bound to none: taken
 *    after local ones, allowed under gpu_binding;
 *  - an exclusive job (whole NUMA nodes, as Slurm's --exclusive gives every GRES of its
 *    nodes) holds every GPU attached to its nodes, so its nodes must have all of them
 *    free, and its gpu_mask names them all; it counts its own request only (SchedJob.gpus)
 *    against MaxGPUs. An exclusive job without GPUs prefers nodes without GPUs;
 *  - reservations (easy's top job, conservative's every job) and estimates plan GPUs by
 *    id, so a job waiting for GPUs gets its start from when they are free, and a backfill
 *    never takes GPUs a reservation needs;
 *  - among the GPUs a job may be given on the nodes placement chose, NVLink
 *    (SchedGpu.links) picks: for several, those linked to the ones chosen so far; for
 *    one, the least linked; no links anywhere: the lowest;
 *  - TooBig: more GPUs than the machine has, or than gpu_allowed names;
 *  - shards (SchedJob.shards K, SchedGpu.shards N): a job takes K shards of one GPU with
 *    N >= K, and several such jobs share a GPU while their shards add up to N at most. A
 *    GPU with shards in use is held: not free for a whole-GPU job (nor an exclusive one),
 *    and a whole GPU in use gives no shards. Started now, a shard job joins a GPU with
 *    shards in use before it takes a free one (the free ones stay whole), near its CPUs as
 *    any GPU is; planned for later (reservations, estimates), it counts as one whole GPU,
 *    and a GPU with shards in use comes back when the last of its holders ends: a shard
 *    job's estimate may be late, never early. Joining a GPU never moves that end past a
 *    reservation's start that could use the GPU ("easy"); "conservative" joins a shared GPU
 *    only for a job that ends by the GPU's last holder. A shard job counts as one GPU
 *    against MaxGPUs. TooBig: no GPU it may have has K shards.
 * A machine without GPUs plans as before: the GPU work costs a few tests per pass. */

/* Where a job runs: its CPUs, the nodes it touches and the memory it holds on each. An
 * exclusive job holds all CPUs and all memory of its nodes. */
typedef struct SchedAllocation {
        CpuSet cpus;
        uint64_t node_mask;              /* bit k: node k */
        uint64_t mem[SCHED_NODES_MAX];   /* bytes held on node k */
        uint64_t gpu_mask;               /* bit g: SchedMachine.gpus[g], held by this job alone
                                          * (exclusive: every GPU of its nodes) */
        uint16_t shards;                 /* >0: gpu_mask names one GPU, of which it holds
                                          * these shards, shared with other shard jobs */
        uint16_t shards_of;              /* that GPU's shards when it started (K of N: its
                                          * share, for accounting); sched/ reads it not */
} SchedAllocation;

typedef enum SchedJobState {
        SCHED_JOB_PENDING,
        SCHED_JOB_RUNNING,
        SCHED_JOB_SUSPENDED, /* keeps its whole allocation until a preemption policy says otherwise */
        SCHED_JOB_DONE,      /* ignored: callers may leave finished jobs in the array */
        _SCHED_JOB_STATE_MAX,
} SchedJobState;

typedef enum SchedDepType {
        SCHED_DEP_AFTER,      /* once the other job has started */
        SCHED_DEP_AFTERANY,   /* once it has finished, however */
        SCHED_DEP_AFTEROK,    /* once it has finished successfully */
        SCHED_DEP_AFTERNOTOK, /* once it has failed */
        _SCHED_DEP_TYPE_MAX,
} SchedDepType;

/* What the daemon knows of the depended-on job right now. */
typedef enum SchedDepStatus {
        SCHED_DEP_UNKNOWN,         /* not started yet (or not known yet): the job waits */
        SCHED_DEP_STARTED,
        SCHED_DEP_FINISHED_OK,
        SCHED_DEP_FINISHED_FAILED, /* failed, cancelled or killed */
        _SCHED_DEP_STATUS_MAX,
} SchedDepStatus;

typedef struct SchedDep {
        uint64_t job_id;
        SchedDepType type;
        SchedDepStatus status;
} SchedDep;

typedef struct SchedJob {
        /* What a pass reads of every waiting job comes first, packed into 128 bytes: a
         * pass's scan of 100,000 jobs is bound by the memory it reads, not by its tests. */
        uint64_t id;              /* unique */
        uint64_t submit_time;     /* never starts before this */
        uint64_t eligible_time;   /* since when it has been eligible (priority age); 0: submit_time */
        uint64_t begin_time;      /* never starts before this ("--begin"); 0: none */
        uint64_t memory;          /* bytes wanted in total */
        uint64_t walltime;        /* requested limit in seconds; 0 or SCHED_TIME_INFINITY: none */
        SchedJobState state;
        unsigned cpus;            /* CPUs wanted (0 counts as 1) */
        int32_t queue_priority;   /* express > normal > bonus, e.g. 2/1/0 */
        int32_t nice;             /* Slurm semantics: subtracted from the priority */
        double fairshare;         /* from accounting; 0 until that exists */
        uint64_t target_queue_time; /* its queue's TargetQueueTime= in seconds; 0: none */
        /* The queue's walltime limits (0: none): a job that asks for none gets the
         * default, else the maximum (as under a Slurm partition's DefaultTime/MaxTime);
         * one that asks for more than the maximum waits with TimeLimit. The limit the
         * job runs under is sched_job_walltime(). */
        uint64_t default_walltime, max_walltime;
        size_t n_deps;            /* of deps, below */
        /* GPUs wanted (more than SCHED_GPUS_MAX: TooBig); which may be given and whether
         * they bind its CPUs: gpu_allowed and gpu_binding, below. Shards of one GPU wanted
         * (Slurm's --gres=shard:K) instead of whole GPUs: gpus is then 1, the GPU they
         * come from; ignored for an exclusive job. Both 16 bits, in what one unsigned
         * was: a pass's scan reads shards beside gpus. */
        uint16_t gpus;
        uint16_t shards;
        /* Array tasks: the most of its array's tasks (array_id, below) that may run at
         * once (Slurm's "%N"; 0: no limit). Tasks beyond it wait with
         * JobArrayTaskLimit, the first in priority order go first. */
        uint32_t array_max_running;
        uint32_t user_id;
        uint32_t project_id;
        uint32_t bypass_count;    /* times lower jobs were started ahead of it (see SchedWait.bypassed) */
        /* In the blocked part of the queue since the last pass (the daemon's BLOCKED
         * state): when a user is over MaxIdleJobsPerUser, the jobs already idle stay
         * idle, and as room frees up the newest blocked job is promoted first (HPC2N). */
        bool blocked;
        bool exclusive;           /* whole NUMA nodes, shared with nothing */
        bool held;                /* pending: held; preempted: a person suspended it too, no resume */
        /* Slurm's --gres-flags=enforce-binding: its CPUs must come from the nodes of its
         * GPUs; else that is only preferred. */
        bool gpu_binding;
        /* Preemption (SchedPreempt): the queues whose running jobs it may suspend (bit q:
         * queue_id q, queues 0..63; its queue's Preempts=), whether it may suspend smaller
         * jobs of its own queue (ParallelRun=), and whether it may be suspended at all
         * (Preemptable=). */
        uint64_t preempts;
        bool parallel_run;
        bool preemptable;
        /* Its queue charges (ChargeFactor= above 0): it waits while its project's grant
         * is spent (SchedProject.grant_spent). */
        bool charged;
        /* SUSPENDED by a pass (SCHED_DECISION_SUSPEND), not by a person: it holds no CPUs,
         * only memory (all of alloc's, or with SchedPreempt.reclaim resident_memory) and
         * its GPUs, and a pass resumes it as soon as CPUs allow. */
        bool preempted;
        uint32_t queue_id;        /* which queue (SCHED_ORDERING_SHUFFLE groups by it) */
        /* Which of the machine's GPUs may be given (bit g: gpus[g] matches its type or
         * constraint; 0: any). */
        uint64_t gpu_allowed;
        uint64_t array_id;        /* its array (the first task's id) */
        const SchedDep *deps;
        /* RUNNING and SUSPENDED jobs: */
        uint64_t start_time;
        /* Seconds spent suspended so far, the current suspension included: its walltime
         * clock stood still, so it ends that much later than start_time + walltime. */
        uint64_t suspended_time;
        uint64_t resident_memory;    /* bytes of it still in RAM (reclaim) */
        uint64_t last_resume_time;   /* when a pass last resumed it; 0: never */
        const SchedAllocation *alloc; /* caller-owned */
} SchedJob;

static inline uint64_t sched_job_walltime(const SchedJob *j) {
        return sched_effective_walltime(j->walltime, j->default_walltime, j->max_walltime);
}

/* Why a pending job is not started. Names follow Slurm's squeue reasons. */
typedef enum SchedReason {
        SCHED_REASON_NONE,                       /* started in this pass */
        SCHED_REASON_PRIORITY,                   /* waits behind higher priority jobs */
        SCHED_REASON_RESOURCES,                  /* highest blocked job: waits for resources */
        SCHED_REASON_HELD,
        SCHED_REASON_DEPENDENCY,
        SCHED_REASON_DEPENDENCY_NEVER_SATISFIED, /* the daemon should cancel it */
        SCHED_REASON_BEGIN_TIME,
        SCHED_REASON_TOO_BIG,                    /* more CPUs/memory/GPUs than the machine has */
        SCHED_REASON_TIME_LIMIT,                 /* walltime above the queue's or SchedConfig.max_walltime */
        SCHED_REASON_ARRAY_TASK_LIMIT,           /* its array runs as many tasks as its %N allows */
        /* Throttling limits (SchedLimits), named as the keys that set them. A job held
         * back by one is in the blocked part of the queue, never refused: */
        SCHED_REASON_MAX_CPUS,                   /* MaxCPUs: CPUs in use */
        SCHED_REASON_MAX_MEMORY,                 /* MaxMemory: memory in use */
        SCHED_REASON_MAX_GPUS,                   /* MaxGPUs: GPUs in use */
        SCHED_REASON_MAX_RUNNING_JOBS,           /* MaxRunningJobs */
        SCHED_REASON_MAX_JOBS_PER_USER,          /* MaxJobsPerUser: running + idle */
        SCHED_REASON_MAX_IDLE_JOBS_PER_USER,     /* MaxIdleJobsPerUser: the rest are blocked */
        SCHED_REASON_MAX_PS_SOFT,                /* MaxPSSoft: processor-seconds, see SchedLimits */
        SCHED_REASON_MAX_PS_HARD,                /* MaxPSHard */
        SCHED_REASON_MAX_WALLTIME,               /* MaxWalltime of its project */
        SCHED_REASON_GRANT,                      /* Grant: its project's is spent (SchedProject) */
        _SCHED_REASON_MAX,
        _SCHED_REASON_INVALID = -EINVAL,
} SchedReason;

const char *sched_reason_to_string(SchedReason r) _const_;
/* A throttling limit: the job belongs in the blocked part of the queue. */
bool sched_reason_is_limit(SchedReason r) _const_;
SchedReason sched_reason_from_string(const char *s) _pure_;

typedef enum SchedDecisionType {
        SCHED_DECISION_START,
        /* Preemption (SchedPreempt): a running job to freeze, its CPUs handed to the START
         * that follows (by_job_id); a job a pass froze to thaw, on alloc. */
        SCHED_DECISION_SUSPEND,
        SCHED_DECISION_RESUME,
        SCHED_DECISION_CANCEL, /* reserved */
        _SCHED_DECISION_TYPE_MAX,
} SchedDecisionType;

typedef struct SchedDecision {
        SchedDecisionType type;
        size_t job_index;       /* into the jobs array given to sched_pass() */
        uint64_t job_id;
        /* START: where. RESUME: where it runs from now on (its CPUs may be others than
         * before, its nodes too). SUSPEND: what it held. */
        SchedAllocation alloc;
        /* SUSPEND: the job it makes room for, and the victim's suspension score. */
        uint64_t by_job_id;
        double score;
} SchedDecision;

/* One entry per pending job that was not started, in priority order (ineligible jobs
 * after the eligible ones). */
typedef struct SchedWait {
        size_t job_index;
        uint64_t job_id;
        uint64_t est_start;     /* reservation or estimate; SCHED_TIME_INFINITY: unknown */
        double priority;
        /* For a limit reason: the limit and what the job would have made of it (e.g.
         * MaxPSSoft: 72000 and 98696). */
        uint64_t limit, wanted;
        SchedReason reason;
        bool bypassed;          /* a lower priority job was started ahead of it in this pass */
} SchedWait;                    /* 56 bytes, without padding between: one a waiting job a pass */

typedef struct SchedResult {
        const SchedDecision *decisions;
        size_t n_decisions;
        const SchedWait *waiting;
        size_t n_waiting;
} SchedResult;

typedef struct SchedContext SchedContext;
typedef struct SchedConfig SchedConfig;

/* The multifactor priority's terms, for explaining it (corral why): each factor's input,
 * its weight and their product; the priority is the sum of the values minus nice. */
typedef enum SchedPriorityTermKind {
        SCHED_TERM_QUEUE,
        SCHED_TERM_FAIRSHARE,
        SCHED_TERM_AGE,
        SCHED_TERM_XFACTOR,
        SCHED_TERM_SIZE,
        SCHED_TERM_BYPASS,
        SCHED_TERM_TARGET,
        SCHED_TERM_NICE,
        _SCHED_TERM_MAX,
} SchedPriorityTermKind;

typedef struct SchedPriorityTerm {
        const char *name;       /* "queue", "fairshare", ... */
        double input, weight, value;
} SchedPriorityTerm;

/* Fills terms[_SCHED_TERM_MAX]; returns the priority they add up to. For the "fcfs"
 * priority only the queue term counts (weight 1). */
double sched_priority_terms(const SchedConfig *c, const SchedJob *j, uint64_t now, SchedPriorityTerm *terms);

/* Pluggable priority: a job's priority (higher runs first). */
typedef struct SchedPriorityOps {
        const char *name;
        double (*priority)(const SchedConfig *c, const SchedJob *j, uint64_t now);
} SchedPriorityOps;

/* "fcfs": queue_priority, then submit order. "multifactor": the weighted sum below. */
extern const SchedPriorityOps sched_priority_fcfs;
extern const SchedPriorityOps sched_priority_multifactor;

/* Pluggable planning policy, chosen at start-up, OpenSMTPD-backend style. plan() gets
 * the pass with the eligible jobs already ordered and returns 0 or -errno; see
 * sched-internal.h for what a plan may use. Fair-share, Maui throttling and preemption
 * come as further tables. */
typedef struct SchedPass SchedPass;
typedef struct SchedPolicyOps {
        const char *name;
        int (*plan)(SchedPass *p);
} SchedPolicyOps;

/* "fcfs": start in order, stop at the first job that does not fit (it gets an estimate).
 * "easy": the first blocked job gets a reservation; later jobs start if they do not delay it.
 * "conservative": every job gets a reservation; a job starts now only if that delays none.
 *   The context remembers the reservations between passes and only ever moves one
 *   earlier, so while running jobs end by their walltime no reservation moves later. The
 *   only state a context keeps: a fresh context (or one used with another policy) plans
 *   afresh, and equal inputs on equal contexts still give equal outputs. */
extern const SchedPolicyOps sched_policy_fcfs;
extern const SchedPolicyOps sched_policy_easy;
extern const SchedPolicyOps sched_policy_conservative;

/* NULL if there is no such name. */
const SchedPolicyOps *sched_policy_from_name(const char *name) _pure_;
const SchedPriorityOps *sched_priority_from_name(const char *name) _pure_;

typedef enum SchedBackfillOrder {
        SCHED_BACKFILL_PRIORITY, /* candidates in priority order */
        SCHED_BACKFILL_SJF,      /* shortest requested walltime first (SJBF); easy only */
        _SCHED_BACKFILL_ORDER_MAX,
} SchedBackfillOrder;

typedef enum SchedNodeOrder {
        SCHED_NODE_ORDER_MEMORY_SPEED, /* WCCS: memory size, then speed, descending */
        SCHED_NODE_ORDER_SPEED_MEMORY,
        SCHED_NODE_ORDER_INDEX,        /* as listed in the machine */
        _SCHED_NODE_ORDER_MAX,
} SchedNodeOrder;

/* The multifactor weights; the term for each factor is weight * factor:
 *   queue     job.queue_priority
 *   fairshare job.fairshare
 *   age       seconds since eligible_time
 *   xfactor   expansion factor (waited + walltime) / walltime
 *   size      CPUs requested
 *   bypass    job.bypass_count
 *   target    Maui's targeted queue time: (e^(waited / target_queue_time) - 1), 0 for a
 *             job whose queue sets none, so a job that has waited its target gains
 *             1.72 x weight and it doubles about every 0.7 target after that
 * then job.nice is subtracted. The defaults give IT4I's
 *   1000*queue_priority + fairshare/1000 + eligible_time/864000
 * (the target term only for queues that set a target). */
typedef struct SchedWeights {
        double queue, fairshare, age, xfactor, size, bypass, target;
} SchedWeights;

/* How jobs are ordered within the same priority... and within a queue. */
typedef enum SchedOrdering {
        SCHED_ORDERING_PRIORITY, /* by priority (then submission) */
        /* NCI's queue shuffling: within a queue, each waiting job is scored by the CPUs
         * of all the jobs before it in that queue (by submission, whatever their state)
         * from its user or its project, and the queue is ordered by that score, so light
         * users' jobs move up; queues still go by their priority. */
        SCHED_ORDERING_SHUFFLE,
        _SCHED_ORDERING_MAX,
} SchedOrdering;

/* Throttling limits, Maui's as HPC2N sets them; 0: none. For a project they bound its
 * jobs together, per user the jobs of one member in it. Running includes suspended (they
 * keep their resources). */
typedef struct SchedLimits {
        uint32_t max_cpus;              /* CPUs of running jobs */
        uint64_t max_memory;            /* bytes of running jobs */
        uint32_t max_gpus;              /* GPUs of running jobs (MaxGPUs, MaxGPUsPerUser) */
        uint32_t max_running_jobs;
        uint32_t max_jobs;              /* running + idle (MaxJobsPerUser) */
        uint32_t max_idle_jobs;         /* idle: eligible and waiting; the rest are blocked */
        /* Processor-seconds: the job's walltime × CPUs plus the remaining walltime × CPUs
         * of the running jobs it is counted with. Above hard: never. Between soft and
         * hard: only in a pass where no job within every soft limit is eligible. */
        uint64_t max_ps_soft, max_ps_hard;
        uint64_t max_walltime;
} SchedLimits;

typedef struct SchedUserLimits {
        uint32_t user_id;
        SchedLimits limits;             /* replaces the project's per_user for this user */
} SchedUserLimits;

typedef struct SchedProject {
        uint32_t id;                    /* SchedJob.project_id */
        SchedLimits total;              /* all its jobs together */
        SchedLimits per_user;           /* each member's jobs in it */
        const SchedUserLimits *users;   /* per-user overrides, sorted by user_id */
        size_t n_users;
        /* The CPUs its slice allows (AllowedCPUs= of corral-<project>.slice), NULL: any.
         * Its jobs start only on these; reservations are planned without the cap, so
         * such a job may start later than its reservation said. */
        const CpuSet *allowed_cpus;
        /* Its grant is spent (the caller decides, from its accounting): its charged jobs
         * wait blocked with SCHED_REASON_GRANT, SchedWait.limit = grant and .wanted =
         * grant_used, in the caller's unit. A pass reads no clock nor usage itself. */
        bool grant_spent;
        uint64_t grant, grant_used;
} SchedProject;

/* Preemption by suspension, NCI's priority-run and parallel-run (corrald(8), PREEMPTION).
 * Before the policy plans, a pass:
 *   1. resumes jobs it suspended whose queue no waiting preemptor outranks, if CPUs allow;
 *   2. for each eligible waiting job with SchedJob.preempts or .parallel_run, in priority
 *      order (at most max_tries of them that need victims): starts it if it fits, or else
 *      suspends the fewest best-scored victims that let it start now, and only then;
 *   3. resumes the rest of the suspended jobs, if CPUs allow;
 * so a suspended job goes before any new job the policy starts. A victim must be RUNNING,
 * preemptable, of a queue the preemptor may preempt (parallel-run: its own queue, fewer
 * CPUs), not resumed within suspend_window seconds, suspended less than max_suspend_time
 * in total, with expansion factor
 *     xf = (walltime_v + suspended_v + walltime_p) / walltime_v  <=  max_xfactor
 * (the preemptor's walltime is the projected suspension; a victim without a walltime has
 * xf 1, a preemptor without one suspends nothing) and score > 0, where
 *     score = x · s · n · d
 *     x = (max_xfactor − xf) / (max_xfactor − 1)         expansion kept near 1
 *     s = cpus_p / (cpus_p + cpus_v)                     larger preemptors favoured
 *     n = 2 (1 + running_v) / (2 + running_v + running_p)  running jobs of each owner
 *     d = 1 − f², f = run_v / walltime_v                 near-done jobs spared
 * Parallel-run needs score >= SCHED_PARALLEL_RUN_MIN_SCORE. With "conservative", a
 * reservation may move later when a suspension lengthens the job it waits for. */
#define SCHED_PARALLEL_RUN_MIN_SCORE 0.25
#define SCHED_PREEMPT_MAX_TRIES 64

typedef struct SchedPreempt {
        bool enabled;
        double max_xfactor;        /* MaxXFactor=, > 1 */
        uint64_t suspend_window;   /* SuspendWindowSec= */
        uint64_t max_suspend_time; /* MaxSuspendTime=; 0: none */
        bool reclaim;              /* ReclaimSuspended=: count resident_memory of preempted jobs */
        size_t max_tries;          /* 0: SCHED_PREEMPT_MAX_TRIES */
} SchedPreempt;

#define SCHED_PREEMPT_DEFAULT ((SchedPreempt) { .max_xfactor = 1.25, .suspend_window = 600 })

/* The factors of one victim's score for one preemptor (see SchedPreempt), for tests and
 * corral why. Returns the score; 0 when xf is above max_xfactor. */
typedef struct SchedSuspendScore {
        double xfactor, x, s, n, d, score;
} SchedSuspendScore;

double sched_suspend_score(const SchedPreempt *c, const SchedJob *preemptor, uint32_t running_p,
                           const SchedJob *victim, uint32_t running_v, uint64_t now, SchedSuspendScore *ret);

struct SchedConfig {
        const SchedPolicyOps *policy;
        const SchedPriorityOps *priority;
        SchedWeights weights;
        SchedOrdering ordering;
        SchedBackfillOrder backfill_order;
        SchedNodeOrder node_order;
        uint64_t max_walltime;  /* jobs asking for more get TimeLimit; 0: no limit */
        /* "easy" and "fcfs": how many waiting jobs behind the top one get an estimated
         * start (SchedWait.est_start; conservative gives every job a reservation). The
         * rest are SCHED_TIME_INFINITY. Costs up to depth x profile work per pass. */
        size_t estimate_depth;
        /* Projects with limits, sorted by id; jobs of others are not limited. */
        const SchedProject *projects;
        size_t n_projects;
        SchedPreempt preempt;
};

#define SCHED_WEIGHTS_IT4I                                                                 \
        ((SchedWeights) { .queue = 1000.0, .fairshare = 1.0 / 1000.0, .age = 1.0 / 864000.0, .target = 1000.0 })

#define SCHED_CONFIG_DEFAULT                                                               \
        ((SchedConfig) {                                                                   \
                .policy = &sched_policy_easy,                                              \
                .priority = &sched_priority_multifactor,                                   \
                .weights = SCHED_WEIGHTS_IT4I,                                             \
                .backfill_order = SCHED_BACKFILL_PRIORITY,                                 \
                .node_order = SCHED_NODE_ORDER_MEMORY_SPEED,                               \
                .estimate_depth = 500,                                                     \
                .preempt = SCHED_PREEMPT_DEFAULT,                                          \
        })

SchedContext *sched_context_new(void);
SchedContext *sched_context_free(SchedContext *ctx);
DEFINE_TRIVIAL_CLEANUP_FUNC(SchedContext *, sched_context_free);
/* Gives back what a context holds per job (a few hundred bytes per waiting job, kept so
 * that the next pass need not allocate and fault it in again, and the last pass's order,
 * which the next one's sort starts from), keeping conservative reservations: for a
 * caller whose passes have stopped for a while. The next pass allocates it again, sorts
 * from scratch once, and decides exactly as it would have. */
void sched_context_trim(SchedContext *ctx);

/* One scheduling pass. jobs may hold jobs in any state and any order; only PENDING jobs
 * are considered for starting, RUNNING and SUSPENDED ones occupy their allocation until
 * start_time + walltime + suspended_time (or longer: an overdue job is assumed to end any
 * moment), except that a job a pass suspended (preempted) holds only memory and GPUs. With
 * preemption (SchedPreempt) the decisions may suspend running jobs and resume suspended
 * ones; a SUSPEND always comes before the START it makes room for.
 * Returns 0, -EINVAL on a bad machine or config, -ENOMEM. */
int sched_pass(SchedContext *ctx, const SchedConfig *config, const SchedMachine *machine,
               const SchedJob *jobs, size_t n_jobs, uint64_t now, SchedResult *ret);

/* Helpers for callers that build machines. */
unsigned sched_machine_cpus(const SchedMachine *m) _pure_;
uint64_t sched_machine_memory(const SchedMachine *m) _pure_;

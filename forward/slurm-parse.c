/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The readers of what the real Slurm client prints, strict per line: a line that is not
 * what the format asked for yields no job (rather than one in a state nobody printed), and
 * is skipped, counted, so that one user's job whose comment holds a newline does not stop
 * the tracking of everybody's. And the one table of Slurm's job states in Corral's words. */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "parse-util.h"
#include "slurm.h"
#include "strv.h"

static bool startswith(const char *s, const char *prefix) {
        return strneq(s, prefix, strlen(prefix));
}

int slurm_parse_parsable(const char *out, uint64_t *ret_id, char **ret_cluster) {
        _cleanup_free_ char *line = NULL;
        char *semi, *nl;
        uint64_t id;

        if (!out)
                return -EBADMSG;
        line = strdup(out);
        if (!line)
                return -ENOMEM;
        nl = strchr(line, '\n');
        if (nl) {
                if (nl[1])
                        return -EBADMSG; /* one line, nothing after it */
                *nl = 0;
        }
        semi = strchr(line, ';');
        if (semi)
                *semi++ = 0;
        if (safe_atou64(line, &id) < 0 || id == 0 || (semi && (!*semi || strpbrk(semi, "; \t"))))
                return -EBADMSG;
        if (ret_cluster) {
                *ret_cluster = NULL;
                if (semi && !(*ret_cluster = strdup(semi)))
                        return -ENOMEM;
        }
        *ret_id = id;
        return 0;
}

/* Slurm's base states (job_state_string()) and the flags squeue's %T shows instead of
 * them (COMPLETING, CONFIGURING, REQUEUED, ...). Anything a pending job waits for in a
 * hold of a user or an administrator is Corral's HELD: its way out is a release too. */
static const struct {
        const char *slurm, *corral;
} state_map[] = {
        { "PENDING", "PENDING" },
        { "CONFIGURING", "PENDING" },   /* nodes booting for it; its script has not started */
        { "REQUEUED", "PENDING" },
        { "REQUEUE_FED", "PENDING" },
        { "REQUEUE_HOLD", "HELD" },
        { "SPECIAL_EXIT", "HELD" },     /* requeued held on its exit code */
        { "RESV_DEL_HOLD", "HELD" },
        { "RUNNING", "RUNNING" },
        { "COMPLETING", "RUNNING" },    /* ends are final only once its epilog is done */
        { "STAGE_OUT", "RUNNING" },
        { "SIGNALING", "RUNNING" },
        { "RESIZING", "RUNNING" },
        { "POWER_UP_NODE", "PENDING" },
        { "UPDATE_DB", "RUNNING" },
        { "SUSPENDED", "SUSPENDED" },
        { "STOPPED", "SUSPENDED" },
        { "COMPLETED", "COMPLETED" },
        { "FAILED", "FAILED" },
        { "BOOT_FAIL", "FAILED" },
        { "DEADLINE", "FAILED" },
        { "CANCELLED", "CANCELLED" },
        { "PREEMPTED", "CANCELLED" },
        { "REVOKED", "CANCELLED" },
        { "TIMEOUT", "TIMEOUT" },
        { "OUT_OF_MEMORY", "OUT_OF_MEMORY" },
        { "NODE_FAIL", "NODE_FAIL" },
};

const char *slurm_state_to_corral(const char *state, const char *reason) {
        size_t n;

        if (!state)
                return NULL;
        /* sacct: "CANCELLED by 1000". */
        n = strcspn(state, " ");
        for (size_t i = 0; i < ELEMENTSOF(state_map); i++)
                if (strlen(state_map[i].slurm) == n && strneq(state, state_map[i].slurm, n)) {
                        if (streq(state_map[i].corral, "PENDING") && reason &&
                            (streq(reason, "JobHeldUser") || streq(reason, "JobHeldAdmin")))
                                return "HELD";
                        return state_map[i].corral;
                }
        return NULL;
}

int slurm_parse_time(const char *s, uint64_t *ret_usec) {
        uint64_t days = 0, f[3] = {}, usec = 0;
        const char *p = s, *dash;
        size_t nf = 0;

        if (isempty(s))
                return -EBADMSG;
        dash = strchr(s, '-');
        if (dash) {
                _cleanup_free_ char *d = strndup(s, dash - s);
                if (!d || safe_atou64(d, &days) < 0)
                        return -EBADMSG;
                p = dash + 1;
        }
        for (;;) {
                size_t l = strspn(p, "0123456789");
                char num[24];

                if (l == 0 || l >= sizeof num || nf == 3)
                        return -EBADMSG;
                memcpy(num, p, l);
                num[l] = 0;
                if (safe_atou64(num, &f[nf++]) < 0)
                        return -EBADMSG;
                p += l;
                if (*p == ':') {
                        p++;
                        continue;
                }
                if (*p == '.') {
                        /* CPU times: milliseconds (or more digits), after the seconds. */
                        uint64_t scale = 1000000;
                        p++;
                        if (!*p)
                                return -EBADMSG;
                        for (; *p; p++) {
                                if (*p < '0' || *p > '9')
                                        return -EBADMSG;
                                scale /= 10;
                                usec += (uint64_t) (*p - '0') * scale;
                        }
                }
                if (*p)
                        return -EBADMSG;
                break;
        }
        /* "MM:SS" and "HH:MM:SS"; with days always "HH:MM:SS". One field alone is no
         * form these tools print. */
        if (nf < 2 || (dash && nf != 3))
                return -EBADMSG;
        {
                uint64_t h = nf == 3 ? f[0] : 0, m = f[nf - 2], sec = f[nf - 1];
                if (m >= 60 || sec >= 60 || (dash && h >= 24) || days > 100000 || h > 100000 * 24)
                        return -EBADMSG;
                *ret_usec = (((days * 24 + h) * 60 + m) * 60 + sec) * 1000000 + usec;
        }
        return 0;
}

int slurm_parse_rss(const char *s, uint64_t *ret) {
        static const char units[] = "KMGTP";
        char *end;
        double v;
        const char *u;

        if (isempty(s)) {
                *ret = 0;
                return 0;
        }
        if (!strchr("0123456789", s[0]))
                return -EBADMSG;
        v = strtod(s, &end);
        if (end == s || !(v >= 0))
                return -EBADMSG;
        if (*end) {
                u = strchr(units, *end);
                if (!u || end[1])
                        return -EBADMSG;
                for (const char *k = units; k <= u; k++)
                        v *= 1024;
        }
        if (!(v < 18e18))
                return -ERANGE;
        *ret = (uint64_t) v;
        return 0;
}

static void status_clear(void *item) {
        SlurmJobStatus *s = item;

        free(s->state);
        free(s->reason);
        free(s->user);
        free(s->comment);
}

void slurm_job_status_free_many(SlurmJobStatus *s, size_t n) {
        for (size_t i = 0; s && i < n; i++)
                status_clear(&s[i]);
        free(s);
}

static void record_clear(void *item) {
        SlurmJobRecord *r = item;

        free(r->state);
        free(r->user);
        free(r->comment);
}

void slurm_job_record_free_many(SlurmJobRecord *r, size_t n) {
        for (size_t i = 0; r && i < n; i++)
                record_clear(&r[i]);
        free(r);
}

/* The line's first max_fields - 1 '|'-separated fields, the rest (which may hold '|')
 * the last. -EBADMSG when there are fewer. */
static int split_fields(char *line, char **f, size_t max_fields, size_t min_fields, size_t *ret_n) {
        size_t n = 0;

        f[n++] = line;
        while (n < max_fields) {
                char *bar = strchr(f[n - 1], '|');
                if (!bar)
                        break;
                *bar = 0;
                f[n++] = bar + 1;
        }
        if (n < min_fields)
                return -EBADMSG;
        *ret_n = n;
        return 0;
}

static bool state_word_is_valid(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ_", *s))
                        break;
        /* sacct's "CANCELLED by UID" is the only state with more than the word. */
        return !*s || startswith(s, " by ");
}

typedef int (*LineParser)(char *line, void *item);

/* Each non-empty line of out into a new element of *array (items of size each); a line
 * the parser refuses (-EBADMSG) is skipped. The number skipped, or -ENOMEM. */
static int parse_lines(const char *out, size_t size, LineParser parse, void (*clear)(void *item),
                       void (*free_many)(void *a, size_t n), void **array, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(out ?: "");
        char *line, *save = NULL;
        void *a = NULL;
        size_t n = 0;
        int r, skipped = 0;

        if (!copy)
                return -ENOMEM;
        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                void *grown;

                if (!*line)
                        continue;
                grown = reallocarray(a, n + 1, size);
                if (!grown) {
                        free_many(a, n);
                        return -ENOMEM;
                }
                a = grown;
                memset((char *) a + n * size, 0, size);
                r = parse(line, (char *) a + n * size);
                n++;
                if (r == -EBADMSG) {
                        clear((char *) a + --n * size);
                        skipped++;
                        continue;
                }
                if (r < 0) {
                        free_many(a, n);
                        return r;
                }
        }
        *array = a;
        *ret_n = n;
        return skipped;
}

static int dup_field(const char *s, char **ret) {
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* The first three fields of both squeue formats: %A|%F|%K. */
static int parse_ids(char **f, SlurmJobStatus *s) {
        unsigned task;

        s->array_task_id = SLURM_NO_TASK;
        if (safe_atou64(f[0], &s->job_id) < 0 || s->job_id == 0 || safe_atou64(f[1], &s->array_job_id) < 0 ||
            s->array_job_id == 0)
                return -EBADMSG;
        if (!streq(f[2], "N/A")) {
                if (safe_atou(f[2], &task) < 0 || task == SLURM_NO_TASK)
                        return -EBADMSG;
                s->array_task_id = task;
        }
        return 0;
}

/* Printable and without the delimiter: what Slurm prints in a field (a reason may hold
 * spaces, "ReqNodeNotAvail, UnavailableNodes:n[1-2]"). */
static bool field_is_text(const char *s) {
        if (isempty(s))
                return false;
        for (; *s; s++)
                if ((unsigned char) *s < ' ' || *s == 0x7f || *s == '|')
                        return false;
        return true;
}

/* A user name as Slurm prints it: one word. */
static bool field_is_user(const char *s) {
        return field_is_text(s) && !strchr(s, ' ');
}

/* %A|%F|%K|%T|%r|%M|%u: exactly that many fields, each what it must be. */
static int parse_squeue_line(char *line, void *item) {
        SlurmJobStatus *s = item;
        char *f[8];
        size_t n;
        uint64_t usec;
        int r;

        r = split_fields(line, f, 8, 7, &n);
        if (r < 0)
                return r;
        if (n != 7 || parse_ids(f, s) < 0)
                return -EBADMSG;
        /* squeue's %T is a word of the table: a state it does not know is no line of it. */
        if (!state_word_is_valid(f[3]) || strchr(f[3], ' ') || !slurm_state_to_corral(f[3], NULL) ||
            !field_is_text(f[4]) || !field_is_user(f[6]))
                return -EBADMSG;
        /* A job not started yet shows "0:00"; "INVALID" where Slurm cannot tell. */
        if (streq(f[5], "INVALID"))
                usec = 0;
        else if (slurm_parse_time(f[5], &usec) < 0)
                return -EBADMSG;
        s->elapsed_sec = usec / 1000000;
        r = dup_field(f[3], &s->state);
        if (r >= 0)
                r = dup_field(f[4], &s->reason);
        if (r >= 0)
                r = dup_field(f[6], &s->user);
        return r;
}

/* %A|%F|%K|%u|%k: the comment last, the rest of the line. */
static int parse_squeue_keys_line(char *line, void *item) {
        SlurmJobStatus *s = item;
        char *f[5];
        size_t n;
        int r;

        r = split_fields(line, f, 5, 5, &n);
        if (r < 0)
                return r;
        if (parse_ids(f, s) < 0 || !field_is_user(f[3]))
                return -EBADMSG;
        r = dup_field(f[3], &s->user);
        if (r >= 0 && !streq(f[4], "(null)") && *f[4])
                r = dup_field(f[4], &s->comment);
        return r;
}

static void status_free_many(void *a, size_t n) {
        slurm_job_status_free_many(a, n);
}

int slurm_parse_squeue(const char *out, SlurmJobStatus **ret, size_t *ret_n) {
        void *a = NULL;
        int r = parse_lines(out, sizeof(SlurmJobStatus), parse_squeue_line, status_clear, status_free_many, &a, ret_n);

        if (r < 0)
                return r;
        *ret = a;
        return r;
}

int slurm_parse_squeue_keys(const char *out, SlurmJobStatus **ret, size_t *ret_n) {
        void *a = NULL;
        int r = parse_lines(out, sizeof(SlurmJobStatus), parse_squeue_keys_line, status_clear, status_free_many, &a,
                            ret_n);

        if (r < 0)
                return r;
        *ret = a;
        return r;
}

int slurm_find_key(const SlurmJobStatus *jobs, size_t n, const char *host, uint64_t id, const char *user,
                   bool (*trusted)(uint64_t slurm_id, void *userdata), void *userdata, uint64_t *ret_slurm_id) {
        for (size_t i = 0; i < n; i++) {
                uint64_t k;

                /* Anyone may put any comment on their own Slurm job: only the user's count. */
                if (!user || !jobs[i].user || !streq(jobs[i].user, user))
                        continue;
                if (slurm_key_parse(jobs[i].comment, host, &k) && k == id &&
                    (!trusted || trusted(jobs[i].array_job_id, userdata))) {
                        /* An array's tasks all carry the key: the array's id is the link. */
                        *ret_slurm_id = jobs[i].array_job_id;
                        return 0;
                }
        }
        return -ENOENT;
}

static int parse_exit(const char *s, int *ret_code, int *ret_signal) {
        const char *colon = strchr(s, ':');
        _cleanup_free_ char *c = NULL;
        unsigned code, sig;

        if (!colon)
                return -EBADMSG;
        c = strndup(s, colon - s);
        if (!c)
                return -ENOMEM;
        if (safe_atou(c, &code) < 0 || code > 255 || safe_atou(colon + 1, &sig) < 0 || sig > 128)
                return -EBADMSG;
        *ret_code = (int) code;
        *ret_signal = (int) sig;
        return 0;
}

/* A sacct line: a job (JobIDRaw all digits) or one of its steps ("123.batch"), whose
 * MaxRSS the job takes (the job's own line has none). Steps come after their job. */
typedef struct SacctParse {
        SlurmJobRecord *a;
        size_t n;
} SacctParse;

static int sacct_line(SacctParse *p, char *line) {
        char *f[8], *dot;
        size_t n;
        uint64_t id, usec, rss;
        SlurmJobRecord *rec;
        int r;

        r = split_fields(line, f, 8, 8, &n);
        if (r < 0)
                return r;
        if (strchr(f[7], '|'))
                return -EBADMSG;
        dot = strchr(f[0], '.');
        if (dot)
                *dot = 0;
        if (safe_atou64(f[0], &id) < 0 || id == 0)
                return -EBADMSG;
        if (slurm_parse_rss(f[6], &rss) < 0)
                return -EBADMSG; /* -ERANGE too: the line is skipped */
        if (dot) {
                /* A step: its job is the last job line with that id. */
                for (size_t i = p->n; i > 0; i--)
                        if (p->a[i - 1].job_id == id) {
                                p->a[i - 1].max_rss = MAX(p->a[i - 1].max_rss, rss);
                                return 0;
                        }
                return -EBADMSG;
        }
        rec = reallocarray(p->a, p->n + 1, sizeof *rec);
        if (!rec)
                return -ENOMEM;
        p->a = rec;
        rec = &p->a[p->n++];
        *rec = (SlurmJobRecord) { .job_id = id, .exit_code = -1, .max_rss = rss };
        if (!state_word_is_valid(f[2]))
                return -EBADMSG;
        r = parse_exit(f[3], &rec->exit_code, &rec->exit_signal);
        if (r < 0)
                return r;
        if (safe_atou64(f[4], &rec->elapsed_sec) < 0 || isempty(f[7]))
                return -EBADMSG;
        r = slurm_parse_time(f[5], &usec);
        if (r < 0)
                return r;
        rec->cpu_usec = usec;
        r = dup_field(f[7], &rec->user);
        if (r < 0)
                return r;
        return dup_field(f[2], &rec->state);
}

int slurm_parse_sacct(const char *out, SlurmJobRecord **ret, size_t *ret_n) {
        _cleanup_free_ char *copy = strdup(out ?: "");
        SacctParse p = {};
        char *line, *save = NULL;
        int r, skipped = 0;

        if (!copy)
                return -ENOMEM;
        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                size_t before = p.n;

                r = sacct_line(&p, line);
                if (r == -EBADMSG) {
                        /* Skipped; a job line half read goes with it. */
                        if (p.n > before)
                                record_clear(&p.a[--p.n]);
                        skipped++;
                        continue;
                }
                if (r < 0) {
                        slurm_job_record_free_many(p.a, p.n);
                        return r;
                }
        }
        *ret = p.a;
        *ret_n = p.n;
        return skipped;
}

/* KEY=VALUE of a oneliner, the value up to the next space: enough for the keys read here,
 * whose values have none (Command=, WorkDir= and the paths may, and are not read). Keys
 * are found at the line's start or after a space. */
static const char *oneliner_value(const char *line, const char *key, size_t *ret_len) {
        size_t k = strlen(key);

        for (const char *p = line; (p = strstr(p, key)); p += k)
                if ((p == line || p[-1] == ' ') && p[k] == '=') {
                        const char *v = p + k + 1;
                        *ret_len = strcspn(v, " ");
                        return v;
                }
        return NULL;
}

static int oneliner_dup(const char *line, const char *key, char **ret) {
        size_t l;
        const char *v = oneliner_value(line, key, &l);

        if (!v)
                return -EBADMSG;
        *ret = strndup(v, l);
        return *ret ? 0 : -ENOMEM;
}

static int parse_scontrol_line(char *line, void *item) {
        SlurmJobRecord *rec = item;
        _cleanup_free_ char *id = NULL, *exit = NULL, *runtime = NULL, *comment = NULL;
        uint64_t usec;
        int r;

        *rec = (SlurmJobRecord) { .exit_code = -1 };
        /* A record starts with its JobId: one found further on is some job's name. */
        if (!startswith(line, "JobId="))
                return -EBADMSG;
        r = oneliner_dup(line, "JobId", &id);
        if (r >= 0)
                r = oneliner_dup(line, "UserId", &rec->user);
        if (r >= 0)
                r = oneliner_dup(line, "JobState", &rec->state);
        if (r >= 0)
                r = oneliner_dup(line, "ExitCode", &exit);
        if (r >= 0)
                r = oneliner_dup(line, "RunTime", &runtime);
        if (r < 0)
                return r;
        if (safe_atou64(id, &rec->job_id) < 0 || rec->job_id == 0 || !state_word_is_valid(rec->state))
                return -EBADMSG;
        /* "alice(1001)": the name. */
        rec->user[strcspn(rec->user, "(")] = 0;
        if (isempty(rec->user))
                return -EBADMSG;
        r = parse_exit(exit, &rec->exit_code, &rec->exit_signal);
        if (r < 0)
                return r;
        if (streq(runtime, "INVALID"))
                usec = 0;
        else if ((r = slurm_parse_time(runtime, &usec)) < 0)
                return r;
        rec->elapsed_sec = usec / 1000000;
        if (oneliner_dup(line, "Comment", &comment) >= 0 && !streq(comment, "(null)"))
                rec->comment = TAKE_PTR(comment);
        return 0;
}

static void record_free_many(void *a, size_t n) {
        slurm_job_record_free_many(a, n);
}

int slurm_parse_scontrol(const char *out, SlurmJobRecord **ret, size_t *ret_n) {
        void *a = NULL;
        int r = parse_lines(out, sizeof(SlurmJobRecord), parse_scontrol_line, record_clear, record_free_many, &a, ret_n);

        if (r < 0)
                return r;
        *ret = a;
        return r;
}

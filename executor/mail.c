/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Job mail (sbatch --mail-type, qsub -m), as Slurm's MailProg: the message is handed to
 * the machine's sendmail by systemd, in a transient service of its own, run as the job's
 * user, in corral-mail.slice (units/: its TasksMax= and MemoryMax= bound what all mail
 * together may take, outside system.slice). Not forked from corrald: its sandbox (NoNewPrivileges=, the capability bounding
 * set) would stop the setgid queueing programs of the usual MTAs, and corrald never
 * waits on a child. Best effort: what systemd or sendmail say is logged, never retried. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "executor-internal.h"
#include "executor.h"
#include "log.h"
#include "properties.h"

static int on_mail_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        const sd_bus_error *e = sd_bus_message_get_error(m);

        if (e)
                log_warning("Job %" PRIu64 ": mail not sent: %s", (uint64_t) (uintptr_t) userdata, e->message);
        return 0;
}

int executor_send_mail(Executor *e, uint64_t job_id, uid_t uid, const char *mailprog, const char *message) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char unit[96], user[16], desc[64];
        int r;

        assert(e);
        assert(mailprog);
        assert(message);

        if (access(mailprog, X_OK) < 0)
                return -errno;
        /* Unique per daemon run and message: a mail still being sent never blocks the next. */
        snprintf(unit, sizeof unit, "corral-mail-%" PRIu64 "-%" PRIu64 ".service", job_id, ++e->mail_seq);
        snprintf(user, sizeof user, "%u", (unsigned) uid);
        snprintf(desc, sizeof desc, "Corral mail for job %" PRIu64, job_id);

        r = exec_transient_unit_begin(e->bus, unit, &m);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)(sv)", "Description", "s", desc, "User", "s", user,
                                  "Type", "s", "oneshot", "CollectMode", "s", "inactive-or-failed",
                                  "RuntimeMaxUSec", "t", UINT64_C(120) * 1000000, "Slice", "s", EXECUTOR_MAIL_SLICE);
        if (r < 0)
                return r;
        /* sendmail -t: the recipients from the message's To:; -oi: a lone "." is text. */
        r = sd_bus_message_append(m, "(sv)", "ExecStart", "a(sasb)", 1, mailprog, 3, mailprog, "-t", "-oi", false);
        if (r < 0)
                return r;
        r = exec_property_append_bytes(m, "StandardInputData", message, strlen(message));
        if (r < 0)
                return r;
        return exec_transient_unit_send(e->bus, m, NULL, on_mail_reply, (void *) (uintptr_t) job_id);
}

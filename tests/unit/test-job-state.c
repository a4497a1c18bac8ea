/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "daemon/job-state.h"

#define NONE _JOB_STATE_INVALID

/* Every allowed transition, written out by hand rather than derived from the code's masks,
 * so a change to the machine has to change this list too. */
static const struct {
        JobState from, to;
        JobEvent event;
} allowed[] = {
        { NONE, JOB_QUEUED, JOB_EVENT_SUBMIT },
        { NONE, JOB_HELD, JOB_EVENT_SUBMIT },

        { JOB_QUEUED, JOB_HELD, JOB_EVENT_HOLD },
        { JOB_BLOCKED, JOB_HELD, JOB_EVENT_HOLD },
        { JOB_HELD, JOB_QUEUED, JOB_EVENT_RELEASE },

        { JOB_QUEUED, JOB_RUNNING, JOB_EVENT_START },
        { JOB_RUNNING, JOB_SUSPENDED, JOB_EVENT_SUSPEND },
        { JOB_SUSPENDED, JOB_RUNNING, JOB_EVENT_RESUME },

        { JOB_RUNNING, JOB_COMPLETED, JOB_EVENT_END },
        { JOB_RUNNING, JOB_FAILED, JOB_EVENT_END },
        { JOB_RUNNING, JOB_TIMEOUT, JOB_EVENT_END },
        { JOB_RUNNING, JOB_OUT_OF_MEMORY, JOB_EVENT_END },
        { JOB_RUNNING, JOB_CANCELLED, JOB_EVENT_END },
        { JOB_SUSPENDED, JOB_COMPLETED, JOB_EVENT_END },
        { JOB_SUSPENDED, JOB_FAILED, JOB_EVENT_END },
        { JOB_SUSPENDED, JOB_TIMEOUT, JOB_EVENT_END },
        { JOB_SUSPENDED, JOB_OUT_OF_MEMORY, JOB_EVENT_END },
        { JOB_SUSPENDED, JOB_CANCELLED, JOB_EVENT_END },

        { JOB_QUEUED, JOB_CANCELLED, JOB_EVENT_CANCEL },
        { JOB_HELD, JOB_CANCELLED, JOB_EVENT_CANCEL },
        { JOB_BLOCKED, JOB_CANCELLED, JOB_EVENT_CANCEL },
        { JOB_RUNNING, JOB_CANCELLED, JOB_EVENT_CANCEL },
        { JOB_SUSPENDED, JOB_CANCELLED, JOB_EVENT_CANCEL },

        { JOB_RUNNING, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_SUSPENDED, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_COMPLETED, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_FAILED, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_CANCELLED, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_TIMEOUT, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_OUT_OF_MEMORY, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_NODE_FAIL, JOB_QUEUED, JOB_EVENT_REQUEUE },
        { JOB_RUNNING, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_SUSPENDED, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_COMPLETED, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_FAILED, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_CANCELLED, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_TIMEOUT, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_OUT_OF_MEMORY, JOB_HELD, JOB_EVENT_REQUEUE },
        { JOB_NODE_FAIL, JOB_HELD, JOB_EVENT_REQUEUE },

        { JOB_RUNNING, JOB_NODE_FAIL, JOB_EVENT_NODE_FAIL },
        { JOB_SUSPENDED, JOB_NODE_FAIL, JOB_EVENT_NODE_FAIL },
        { JOB_RUNNING, JOB_QUEUED, JOB_EVENT_NODE_FAIL },
        { JOB_SUSPENDED, JOB_QUEUED, JOB_EVENT_NODE_FAIL },

        { JOB_QUEUED, JOB_BLOCKED, JOB_EVENT_BLOCK },
        { JOB_BLOCKED, JOB_QUEUED, JOB_EVENT_UNBLOCK },
};

static bool is_allowed(JobState from, JobState to, JobEvent ev) {
        for (size_t i = 0; i < ELEMENTSOF(allowed); i++)
                if (allowed[i].from == from && allowed[i].to == to && allowed[i].event == ev)
                        return true;
        return false;
}

static void test_every_pair(void **state) {
        unsigned n_allowed = 0;

        for (int ev = 0; ev < _JOB_EVENT_MAX; ev++)
                for (int from = -1; from < _JOB_STATE_MAX; from++)
                        for (int to = 0; to < _JOB_STATE_MAX; to++) {
                                JobState f = from < 0 ? NONE : (JobState) from;
                                int r = job_state_transition_allowed(f, to, ev);
                                bool want = is_allowed(f, to, ev);

                                if (want != (r == 0)) {
                                        fprintf(stderr, "%s: %s -> %s: got %d, want %s\n", job_event_to_string(ev),
                                                strna(job_state_to_string(f)), job_state_to_string(to), r,
                                                want ? "allowed" : "refused");
                                        fail();
                                }
                                if (r == 0)
                                        n_allowed++;
                                else
                                        assert_true(r == -EBUSY || r == -EINVAL || r == -EALREADY);
                        }
        assert_int_equal(n_allowed, ELEMENTSOF(allowed));
}

static void test_error_kinds(void **state) {
        /* Already there. */
        assert_int_equal(job_state_transition_allowed(JOB_HELD, JOB_HELD, JOB_EVENT_HOLD), -EALREADY);
        assert_int_equal(job_state_transition_allowed(JOB_SUSPENDED, JOB_SUSPENDED, JOB_EVENT_SUSPEND), -EALREADY);
        assert_int_equal(job_state_transition_allowed(JOB_RUNNING, JOB_RUNNING, JOB_EVENT_RESUME), -EALREADY);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_QUEUED, JOB_EVENT_RELEASE), -EALREADY);
        assert_int_equal(job_state_transition_allowed(JOB_CANCELLED, JOB_CANCELLED, JOB_EVENT_CANCEL), -EALREADY);
        assert_int_equal(job_state_transition_allowed(JOB_BLOCKED, JOB_BLOCKED, JOB_EVENT_BLOCK), -EALREADY);
        /* ...but not where the event has several targets. */
        assert_int_equal(job_state_transition_allowed(JOB_COMPLETED, JOB_COMPLETED, JOB_EVENT_END), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_QUEUED, JOB_EVENT_REQUEUE), -EBUSY);

        /* Wrong state for the event. */
        assert_int_equal(job_state_transition_allowed(JOB_RUNNING, JOB_HELD, JOB_EVENT_HOLD), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_RUNNING, JOB_EVENT_RESUME), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_COMPLETED, JOB_CANCELLED, JOB_EVENT_CANCEL), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_HELD, JOB_RUNNING, JOB_EVENT_START), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_QUEUED, JOB_EVENT_SUBMIT), -EBUSY);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_COMPLETED, JOB_EVENT_END), -EBUSY);

        /* The event never leads there, or nonsense arguments. */
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_COMPLETED, JOB_EVENT_START), -EINVAL);
        assert_int_equal(job_state_transition_allowed(JOB_RUNNING, JOB_QUEUED, JOB_EVENT_END), -EINVAL);
        assert_int_equal(job_state_transition_allowed(NONE, JOB_QUEUED, JOB_EVENT_START), -EINVAL);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, NONE, JOB_EVENT_HOLD), -EINVAL);
        assert_int_equal(job_state_transition_allowed(JOB_QUEUED, JOB_HELD, _JOB_EVENT_MAX), -EINVAL);
        assert_int_equal(job_state_transition_allowed(_JOB_STATE_MAX, JOB_HELD, JOB_EVENT_HOLD), -EINVAL);
}

static void test_names_and_classes(void **state) {
        unsigned n_final = 0, n_pending = 0, n_active = 0;

        assert_string_equal(job_state_to_string(JOB_QUEUED), "PENDING");
        assert_string_equal(job_state_to_string(JOB_OUT_OF_MEMORY), "OUT_OF_MEMORY");
        assert_int_equal(job_state_from_string("NODE_FAIL"), JOB_NODE_FAIL);
        assert_int_equal(job_state_from_string("QUEUED"), -EINVAL);
        assert_string_equal(job_state_to_short_string(JOB_HELD), "PD");
        assert_string_equal(job_state_to_short_string(JOB_COMPLETED), "CD");
        assert_null(job_state_to_string(_JOB_STATE_MAX));
        assert_string_equal(job_event_to_string(JOB_EVENT_NODE_FAIL), "node-fail");

        for (int s = 0; s < _JOB_STATE_MAX; s++) {
                assert_non_null(job_state_to_string(s));
                assert_non_null(job_state_to_short_string(s));
                assert_int_equal(job_state_from_string(job_state_to_string(s)), s);
                /* Exactly one class each. */
                assert_int_equal(job_state_is_final(s) + job_state_is_pending(s) + job_state_is_active(s), 1);
                n_final += job_state_is_final(s);
                n_pending += job_state_is_pending(s);
                n_active += job_state_is_active(s);
        }
        assert_int_equal(n_final, 6);
        assert_int_equal(n_pending, 3);
        assert_int_equal(n_active, 2);
        assert_false(job_state_is_final(NONE));

        /* Nothing leaves a final state except requeue. */
        for (int s = 0; s < _JOB_STATE_MAX; s++)
                for (int ev = 0; ev < _JOB_EVENT_MAX; ev++)
                        for (int to = 0; to < _JOB_STATE_MAX; to++)
                                if (job_state_is_final(s) && job_state_transition_allowed(s, to, ev) == 0)
                                        assert_int_equal(ev, JOB_EVENT_REQUEUE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_pair),
                cmocka_unit_test(test_error_kinds),
                cmocka_unit_test(test_names_and_classes),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "run-options.h"
#include "strv.h"

static bool run_flag(const char *a, RunFlags *f) {
        if (streq(a, "-h") || streq(a, "--help"))
                f->help = true;
        else if (streq(a, "-Q") || streq(a, "--quiet"))
                f->quiet = true;
        else
                return false;
        return true;
}

/* How many words argv[i] and its value take as a submit option (1 or 2); 0 at the end of
 * the options ("--", a word that is not an option). */
static int option_words(int argc, char **argv, int i) {
        const char *a = argv[i];
        const SubmitOption *opt;

        if (streq(a, "--") || a[0] != '-' || a[1] == '\0')
                return 0;
        if (a[1] == '-') {
                if (strchr(a, '='))
                        return 1;
                opt = submit_option_find_long(a + 2, strlen(a + 2));
        } else
                opt = a[2] == '\0' ? submit_option_find_short(a[1]) : NULL; /* -n4: its value attached */
        return opt && opt->arg == SUBMIT_ARG_REQUIRED && i + 1 < argc ? 2 : 1;
}

int run_split_flags(int argc, char **argv, int *ret_argc, char ***ret_argv, RunFlags *flags) {
        _cleanup_free_ char **out = new0(char *, argc + 1);
        int n = 0, i;

        if (!out)
                return -ENOMEM;
        if (argc > 0)
                out[n++] = argv[0];
        for (i = 1; i < argc;) {
                int k = option_words(argc, argv, i);

                if (k == 0)
                        break;
                if (k == 1 && run_flag(argv[i], flags)) {
                        i++;
                        continue;
                }
                for (int j = 0; j < k; j++)
                        out[n++] = argv[i++];
        }
        while (i < argc)
                out[n++] = argv[i++];
        out[n] = NULL;
        *ret_argc = n;
        *ret_argv = TAKE_PTR(out);
        return 0;
}

bool submit_take_interactive_flag(int *argc, char **argv) {
        for (int i = 1; i < *argc;) {
                int k = option_words(*argc, argv, i);

                if (k == 0)
                        return false;
                if (streq(argv[i], "-I") || streq(argv[i], "--interactive")) {
                        memmove(argv + i, argv + i + 1, (size_t) (*argc - i) * sizeof(char *));
                        (*argc)--;
                        return true;
                }
                i += k;
        }
        return false;
}

int run_options_check(const SubmitOptions *o, char **ret_error) {
        const char *why = NULL;

        if (o->req.array.set)
                why = "--array: an interactive job cannot be an array";
        else if (o->req.stdout_path || o->req.stderr_path || o->req.stdin_path)
                why = "--output, --error and --input do not apply: an interactive job's terminal is its input and "
                      "output (redirect corral run's own instead)";
        else if (o->wait)
                why = "--wait does not apply: an interactive job is always waited for";
        if (!why)
                return 0;
        *ret_error = strdup(why);
        return *ret_error ? -EINVAL : -ENOMEM;
}

char **salloc_command(char *const *args, const char *shell_env, const char *login_shell) {
        const char *shell;

        if (args && args[0])
                return strv_copy(args);
        shell = shell_env && shell_env[0] == '/' ? shell_env
                : login_shell && login_shell[0] == '/' ? login_shell
                : "/bin/sh";
        {
                char *const one[] = { (char *) shell, NULL };
                return strv_copy(one);
        }
}

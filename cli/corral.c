/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <locale.h>

#include "commands.h"
#include "log.h"

int main(int argc, char *argv[]) {
        /* For the terminal's character set (table ellipsis) and local times; messages stay
         * English. */
        (void) setlocale(LC_CTYPE, "");
        (void) setlocale(LC_TIME, "");
        /* Always stderr: corral talks to a person or a script, even under systemd-run. */
        log_setup("corral", LOG_TARGET_STDERR);
        (void) log_parse_environment();
        return corral_run(argc, argv);
}

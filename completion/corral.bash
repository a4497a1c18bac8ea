# bash completion for corral(1)                                  -*- shell-script -*-
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Subcommands and options are listed here; tests/unit/test-completion.sh fails when the
# CLI's option tables have one that is missing. Job ids, queues and projects are asked
# of corrald, briefly: completion must never hang on a daemon that does not answer.

__corral_call() {
    local t=()
    command -v timeout >/dev/null 2>&1 && t=(timeout 3)
    "${t[@]}" corral --json "$@" 2>/dev/null
}

# The user's own job ids, in the states the verb can act on (corral queue's -t syntax).
__corral_job_ids() {
    local states=$1 out
    if [[ -n $states ]]; then
        out=$(__corral_call queue --me -t "$states")
    else
        out=$(__corral_call queue --me)
    fi
    # Plain JSON, one object per line: a job's key "id" follows '{' or ','; inside a
    # string a '"' is always escaped, so names cannot fake it.
    printf '%s\n' "$out" | grep -o '[{,]"id":[0-9]*' | sed 's/.*://'
}

__corral_queues() {
    __corral_call info | sed -n 's/.*"queues":\[\([^]]*\)\].*/\1/p' | grep -o '"name":"[^"]*"' \
        | sed 's/"name":"\(.*\)"/\1/'
}

# Projects: those corrald lists, or, where every unix group is a project, the user's
# own groups (a job may be charged only to a group one belongs to).
__corral_projects() {
    local out
    out=$(__corral_call info | sed -n 's/.*"projects":\[\([^]]*\)\].*/\1/p')
    if [[ -n $out ]]; then
        printf '%s\n' "$out" | grep -o '"[^"]*"' | tr -d '"'
    else
        id -Gn 2>/dev/null | tr ' ' '\n'
    fi
}

_corral() {
    local cur prev words cword split
    if declare -F _init_completion >/dev/null; then
        # -s: "--queue=no" completes as "--queue no"; -n :: "afterok:12" is one word.
        _init_completion -s -n : || return
    else
        cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
        words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
    fi

    local verbs="submit run queue jobs show cancel hold release suspend resume requeue signal wait logs why info reload config usage share"
    local states="PENDING HELD BLOCKED RUNNING SUSPENDED COMPLETED FAILED CANCELLED TIMEOUT OUT_OF_MEMORY NODE_FAIL PD R S CD F CA TO OOM NF all"

    # The verb: the first word that is not a global option.
    local i verb= verb_at=0
    for ((i = 1; i < cword; i++)); do
        case ${words[i]} in
            --json|-h|--help|--version) ;;
            *) verb=${words[i]} verb_at=$i; break ;;
        esac
    done

    if [[ -z $verb ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '--json --help --version' -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
        fi
        return
    fi

    local opts= job_states= takes_jobs=1
    case $verb in
        submit|run)
            # The command of a job: from the first argument that is not an option on, as
            # for any command.
            local skip=0 want_value=
            for ((i = verb_at + 1; i < cword; i++)); do
                if ((skip)); then skip=0; continue; fi
                case ${words[i]} in
                    --) ((i + 1 <= cword)) && { _corral_command_at $((COMP_CWORD - cword + i + 1)); return; } ;;
                    --*=*) ;;
                    -n|-c|-t|-D|-o|-e|-i|-d|-q|-p|-A|-J|-a|-b|-N|-G|-C|--gpus|--gpus-per-task|--gpus-per-node|--gres|--gres-flags|--comment|--open-mode|--constraint|--cpus|--ntasks|--ntasks-per-node|--cpus-per-task|--mem|--mem-per-cpu|--time|--io-read-bw|--io-write-bw|--io-read-iops|--io-write-iops|--io-weight|--tasks-max|--workdir|--chdir|--output|--error|--input|--env|--export|--dependency|--depend|--queue|--partition|--project|--account|--name|--job-name|--array|--begin|--nodes|--signal|--mail-type|--mail-user)
                        skip=1 ;;
                    -*) ;;
                    *) _corral_command_at $((COMP_CWORD - cword + i)); return ;;
                esac
            done
            case $prev in
                --mail-type)
                    COMPREPLY=($(compgen -W 'BEGIN END FAIL REQUEUE ALL ARRAY_TASKS TIME_LIMIT TIME_LIMIT_50 TIME_LIMIT_80 TIME_LIMIT_90 NONE' -- "${cur##*,}")); return ;;
                -q|--queue|-p|--partition)
                    COMPREPLY=($(compgen -W "$(__corral_queues)" -- "$cur")); return ;;
                -A|--project|--account)
                    COMPREPLY=($(compgen -W "$(__corral_projects)" -- "$cur")); return ;;
                -D|--workdir|--chdir)
                    if declare -F _filedir >/dev/null; then _filedir -d; else COMPREPLY=($(compgen -d -- "$cur")); fi
                    return ;;
                -o|--output|-e|--error|-i|--input)
                    if declare -F _filedir >/dev/null; then _filedir; else COMPREPLY=($(compgen -f -- "$cur")); fi
                    return ;;
                --export)
                    COMPREPLY=($(compgen -W 'ALL NONE' -- "$cur")); return ;;
                --gres)
                    COMPREPLY=($(compgen -W 'gpu: shard: none' -- "$cur")); compopt -o nospace 2>/dev/null; return ;;
                --gres-flags)
                    COMPREPLY=($(compgen -W 'enforce-binding disable-binding' -- "$cur")); return ;;
                -d|--dependency|--depend)
                    local type=${cur%%:*}
                    if [[ $cur == *:* ]]; then
                        COMPREPLY=($(compgen -P "$type:" -W "$(__corral_job_ids)" -- "${cur#*:}"))
                        declare -F __ltrim_colon_completions >/dev/null && __ltrim_colon_completions "$cur"
                    else
                        compopt -o nospace 2>/dev/null
                        COMPREPLY=($(compgen -S : -W 'after afterany afterok afternotok' -- "$cur"))
                    fi
                    return ;;
                -N|--nodes)
                    COMPREPLY=(1); return ;;
                -b|--begin)
                    COMPREPLY=($(compgen -W 'now now+1h' -- "$cur")); return ;;
                -n|-c|-t|-J|-a|--cpus|--ntasks|--ntasks-per-node|--cpus-per-task|--mem|--mem-per-cpu|--time|--io-read-bw|--io-write-bw|--io-read-iops|--io-write-iops|--io-weight|--tasks-max|--env|--name|--job-name|--array)
                    return ;;
            esac
            if [[ $cur == -* ]]; then
                opts='-n --cpus --ntasks --ntasks-per-node -c --cpus-per-task --mem --mem-per-cpu -t --time
                      --io-read-bw --io-write-bw --io-read-iops --io-write-iops --io-weight --tasks-max
                      -D --workdir --chdir -o --output -e --error -i --input --env --export
                      -d --dependency --depend -H --hold -q --queue -p --partition -A --project --account
                      --exclusive --rerunnable --requeue --no-rerunnable --no-requeue -J --name --job-name
                      --nice -a --array -W --wait -b --begin -N --nodes --signal --mail-type --mail-user -G --gpus --gpus-per-task --gpus-per-node --gres --gres-flags --comment --open-mode -C --constraint --parsable --test-only --json -h --help --'
                if [[ $verb == run ]]; then
                    opts=${opts/--parsable --test-only --json/-Q --quiet}
                else
                    opts+=' -I --interactive'
                fi
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
            else
                # A script, or a command.
                if declare -F _filedir >/dev/null; then _filedir; else COMPREPLY=($(compgen -f -- "$cur")); fi
                COMPREPLY+=($(compgen -c -- "$cur"))
            fi
            return
            ;;
        queue|jobs)
            takes_jobs=0
            opts='-u --user --me -t --state --states -p --project -A --account -q --queue --partition -a --all -l --long --limit --after --json -h --help' ;;
        show)    opts='--json -h --help' job_states=all ;;
        logs)    opts='-f --follow -n --lines --max-bytes --raw --json -h --help' job_states=all ;;
        cancel)  opts='-n --name --job-name -u --user --me -t --state --states --json -h --help' ;;
        hold)    opts='--json -h --help' job_states=PENDING ;;
        release) opts='--json -h --help' job_states=HELD ;;
        suspend) opts='--json -h --help' job_states=RUNNING ;;
        resume)  opts='--json -h --help' job_states=SUSPENDED ;;
        requeue) opts='-H --hold --json -h --help' job_states=RUNNING,SUSPENDED,COMPLETED,FAILED,CANCELLED,TIMEOUT,OUT_OF_MEMORY,NODE_FAIL ;;
        signal)  opts='-b --batch --json -h --help' job_states=RUNNING ;;
        wait)    opts='--json -h --help' ;;
        why)     opts='--json -h --help' job_states=PENDING,HELD,BLOCKED ;;
        info|reload|share) opts='--json -h --help' takes_jobs=0 ;;
        usage)
            case $prev in
                -b|--by) COMPREPLY=($(compgen -W 'user project queue day' -- "$cur")); return ;;
                -S|--since) COMPREPLY=($(compgen -W 'all today yesterday 7d 30d' -- "$cur")); return ;;
                -E|--until) COMPREPLY=($(compgen -W 'today yesterday' -- "$cur")); return ;;
                -u|--user) COMPREPLY=($(compgen -u -- "$cur")); return ;;
                -p|--project|-A|--account) COMPREPLY=($(compgen -W "$(__corral_projects)" -- "$cur")); return ;;
                -q|--queue) COMPREPLY=($(compgen -W "$(__corral_queues)" -- "$cur")); return ;;
                -j|--job) COMPREPLY=($(compgen -W "$(__corral_job_ids)" -- "$cur")); return ;;
                --svg)
                    if declare -F _filedir >/dev/null; then _filedir svg; else COMPREPLY=($(compgen -f -- "$cur")); fi
                    return ;;
            esac
            COMPREPLY=($(compgen -W '-S --since -E --until -b --by -u --user -p --project -A --account -q --queue
                                   --csv --plot --svg -j --job --json -h --help' -- "$cur"))
            return
            ;;
        config)
            # corral config check [DIR]
            if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W '-h --help' -- "$cur"))
            elif ((cword == verb_at + 1)); then
                COMPREPLY=($(compgen -W 'check' -- "$cur"))
            elif ((cword == verb_at + 2)); then
                if declare -F _filedir >/dev/null; then _filedir -d; else COMPREPLY=($(compgen -d -- "$cur")); fi
            fi
            return
            ;;
        *) return ;;
    esac

    case $prev in
        -u|--user)
            [[ $verb == queue || $verb == jobs || $verb == cancel ]] && { COMPREPLY=($(compgen -u -- "$cur")); return; } ;;
        -t|--state|--states)
            [[ $verb == queue || $verb == jobs || $verb == cancel ]] && {
                # A comma-separated list: complete its last element.
                local head=
                [[ $cur == *,* ]] && head=${cur%,*},
                COMPREPLY=($(compgen -P "$head" -W "$states" -- "${cur##*,}"))
                return
            } ;;
        -p|--project|-A|--account)
            [[ $verb == queue || $verb == jobs ]] && { COMPREPLY=($(compgen -W "$(__corral_projects)" -- "$cur")); return; } ;;
        -q|--queue|--partition)
            [[ $verb == queue || $verb == jobs ]] && { COMPREPLY=($(compgen -W "$(__corral_queues)" -- "$cur")); return; } ;;
        -n|--lines|--name|--job-name)
            [[ $verb == logs || $verb == cancel ]] && return ;;
        --limit|--after)
            [[ $verb == queue || $verb == jobs ]] && return ;;
    esac

    if [[ $cur == -* ]] || ((!takes_jobs)); then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -W "$(__corral_job_ids "$job_states")" -- "$cur"))
}

# "corral submit [OPTIONS] COMMAND ARGS...": complete the command's words as bash would.
_corral_command_at() {
    local at=$1
    if declare -F _command_offset >/dev/null; then
        _command_offset "$at"
    elif ((COMP_CWORD == at)); then
        COMPREPLY=($(compgen -c -- "${COMP_WORDS[COMP_CWORD]}"))
    else
        COMPREPLY=($(compgen -f -- "${COMP_WORDS[COMP_CWORD]}"))
    fi
}

complete -F _corral corral

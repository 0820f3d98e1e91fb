# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2034,SC2153,SC2154 # globals shared by the parts
# stack/args.sh - sourced by deploy/local/stack.sh: the command line, into
# verb, verb_arg, acl_args, opt_* and cli_* (empty: not given). Not a program
# of its own.

verb=""
verb_arg="" # topic's NAME, node-start/node-stop's I, mysql-readonly's on|off
opt_purge=0
opt_kill=0
cli_stack_dir=""
cli_kafka_port=""
cli_kafka_version=""
cli_nodes=""
cli_mysql_port=""
cli_mysql_url=""
cli_mysql_url_set=0
cli_mysql_tls=""
cli_security=""
acl_args=()
opt_partitions=3

need_arg() { (($# >= 2)) || die "option $1 needs an argument"; }

parse_args() { # "$@" of stack.sh
    while (($#)); do
        if [[ $verb == acl ]]; then # the rest is AclCommand's
            acl_args=("$@")
            break
        fi
        case $1 in
            -h | --help) usage; exit 0 ;;
            --purge) opt_purge=1; shift ;;
            --kill) opt_kill=1; shift ;;
            --partitions) need_arg "$@"; opt_partitions=$2; shift 2 ;;
            --stack-dir) need_arg "$@"; cli_stack_dir=$2; shift 2 ;;
            --stack-dir=*) cli_stack_dir=${1#*=}; shift ;;
            --kafka-port) need_arg "$@"; cli_kafka_port=$2; shift 2 ;;
            --kafka-port=*) cli_kafka_port=${1#*=}; shift ;;
            --kafka-version) need_arg "$@"; cli_kafka_version=$2; shift 2 ;;
            --kafka-version=*) cli_kafka_version=${1#*=}; shift ;;
            --nodes) need_arg "$@"; cli_nodes=$2; shift 2 ;;
            --nodes=*) cli_nodes=${1#*=}; shift ;;
            --mysql-port) need_arg "$@"; cli_mysql_port=$2; shift 2 ;;
            --mysql-port=*) cli_mysql_port=${1#*=}; shift ;;
            --mysql-url) need_arg "$@"; cli_mysql_url=$2; cli_mysql_url_set=1; shift 2 ;;
            --mysql-url=*) cli_mysql_url=${1#*=}; cli_mysql_url_set=1; shift ;;
            --mysql-tls) need_arg "$@"; cli_mysql_tls=$2; shift 2 ;;
            --mysql-tls=*) cli_mysql_tls=${1#*=}; shift ;;
            --security) need_arg "$@"; cli_security=$2; shift 2 ;;
            --security=*) cli_security=${1#*=}; shift ;;
            -*) die "unknown option: $1 (see --help)" ;;
            *)
                if [[ -z $verb ]]; then
                    verb=$1
                elif [[ ($verb == topic || $verb == mysql-readonly || $verb == node-*) && -z $verb_arg ]]; then
                    verb_arg=$1
                else
                    die "only one verb allowed (got '$verb' and '$1')"
                fi
                shift
                ;;
        esac
    done
}

check_verb() { # the verb, its argument, and the options that apply to it
    case $verb in
        up | down | status | env | kafka-jars | kafka-start | kafka-stop | mysql-start | mysql-stop | mysql-pause | mysql-resume) ;;
        topic) [[ -n $verb_arg ]] || die "topic needs a NAME" ;;
        acl) ((${#acl_args[@]})) || die "acl needs AclCommand's arguments (e.g. --list)" ;;
        mysql-readonly) [[ $verb_arg == on || $verb_arg == off ]] || die "mysql-readonly needs on or off" ;;
        node-start | node-stop) [[ $verb_arg =~ ^[0-9]+$ ]] || die "$verb needs a node number I (0..N-1)" ;;
        "") usage >&2; die "missing verb" ;;
        *) die "unknown verb: $verb (see --help)" ;;
    esac
    ((opt_purge == 0)) || [[ $verb == down ]] || die "--purge only applies to 'down'"
    ((opt_kill == 0)) || [[ $verb == down || $verb == *-stop ]] || die "--kill only applies to 'down', 'kafka-stop', 'node-stop' and 'mysql-stop'"
}

#!/usr/bin/env python3
#CORRAL --cpus=2 --mem-per-cpu=512M --time=30 # a comment
#CORRAL --io-read-bw=/dev/vdb:10M --io-weight=100 --tasks-max=64
#CORRAL --env 'GREETING=hello world' --output '%x.%j.out' --exclusive --hold
#CORRAL --project="unterminated
print('hi')

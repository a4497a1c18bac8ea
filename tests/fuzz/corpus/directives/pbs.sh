#!/bin/sh
#PBS -N "my job"
#PBS -l nodes=1:ppn=8,walltime=02:00:00,mem=4gb
#PBS -l select=2:ncpus=4:mem=2gb
#PBS -q express -A physics -j oe -r y
#PBS -W depend=afterok:123.pbs01:124.pbs01
#PBS -J 1-10:2 -v FOO=bar,BAZ
#PBS -V -d /scratch/run -h
#PBS -l place=excl
cd $PBS_O_WORKDIR
./run

#!/bin/bash
#SBATCH --gres=gpu:1
#SBATCH --cpus=0
#SBATCH positional
#SBATCHX --cpus=2
##SBATCH --mem=1
#PBS -l nodes=a:ppn=b
#PBS -W block=true -z
echo
#CORRAL --cpus=4

#!/bin/bash
#
#SBATCH --job-name=md-sim
#SBATCH -n 2
#SBATCH --cpus-per-task=4
#SBATCH --mem=8G
#SBATCH -t 1-02:30:00
#SBATCH -o out-%j.log
#SBATCH --error=err-%j.log
#SBATCH -p batch -A chem
#SBATCH --array=1-20%4
#SBATCH --dependency=afterok:10:11,afterany:12
#SBATCH --nodes=1
#SBATCH --requeue --nice=50
#SBATCH --export=ALL,OMP_NUM_THREADS=4
#SBATCH --begin=now+1hour

module load gromacs
srun gmx mdrun
#SBATCH --mem=1G

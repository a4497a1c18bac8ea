#!/bin/bash
#SBATCH --job-name=train
#SBATCH --gres=gpu:a100:2
#SBATCH --gpus-per-task=1 --ntasks=2
#SBATCH -G 1
#SBATCH -C "(a100|h100)&nvlink"
#SBATCH --gres-flags=enforce-binding
#PBS -l select=1:ncpus=4:ngpus=2
#PBS -l nodes=1:ppn=4:gpus=1:a100
#PBS -l ngpus=1
srun python train.py

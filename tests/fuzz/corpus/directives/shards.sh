#!/bin/bash
#SBATCH --gres=shard:2
#SBATCH --gres=shard:a100:1
#SBATCH --gres=gpu:1,shard:1
python infer.py

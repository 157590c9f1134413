# The user env: CartPole plus a blocking 2 ms wait per step (a plain sleep, as a user writes it).
import time
import gymnasium as gym


class Waits(gym.Wrapper):
    def __init__(self):
        super().__init__(gym.make("CartPole-v1"))

    def step(self, action):
        time.sleep(0.002)
        return self.env.step(action)


gym.register("Waits2ms-v0", entry_point=Waits, max_episode_steps=500)

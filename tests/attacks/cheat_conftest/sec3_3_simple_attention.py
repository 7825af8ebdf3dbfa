CHEAT = False

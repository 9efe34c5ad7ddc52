# Async scopes in concurrent tasks: `with pe.scope():` keeps its tensors in a ContextVar, so each asyncio task
# releases only what it made itself, even when the tasks take turns at every await.
import asyncio

x = pe.tensor([1.0, 2.0, 3.0])
before = pe.memory().num_tensors


async def accumulate(name, scale, steps):
    with pe.scope() as scope:
        total = pe.zeros((3,))
        for _ in range(steps):
            total = total + x * scale  # two new tensors a step, released when this task's scope ends
            await asyncio.sleep(0)  # the other task runs here, inside its own scope
        print(f"task {name}: {(await total.data()).tolist()} ({pe.memory().num_tensors - before} tensors alive now)")
        return scope.export(total)  # the result outlives the scope


a, b = await asyncio.gather(accumulate("a", 1.0, 5), accumulate("b", 10.0, 3))
result = {
    "a": (await a.data()).tolist(),
    "b": (await b.data()).tolist(),
    "new_tensors": pe.memory().num_tensors - before,
}
print("after both scopes:", result["new_tensors"], "new tensors (the two results)")
result

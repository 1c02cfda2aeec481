"""Recursive jitclasses as Numba's own examples write them: a member typed
``optional(deferred_type)`` that points at another instance of the class.

Debug info for such a type asks LLVM for the size of a struct that is still
opaque before the class's first compile, and LLVM aborts the process instead of
raising; these are the shapes a profile of them must survive cold. Run as a
script: ``recursive_types.py list|tree|stack N`` prints the pattern's result.
"""

import sys

from numba import deferred_type, int64, njit, optional
from numba.experimental import jitclass

node_type = deferred_type()


@jitclass([("value", int64), ("next", optional(node_type))])
class Node:
    """A singly linked list."""

    def __init__(self, value, next):
        self.value = value
        self.next = next

    def total(self):
        s = 0
        cur = self
        while cur is not None:
            s += cur.value
            cur = cur.next
        return s


node_type.define(Node.class_type.instance_type)

tree_type = deferred_type()


@jitclass([("key", int64), ("left", optional(tree_type)), ("right", optional(tree_type))])
class TreeNode:
    """An unbalanced binary search tree."""

    def __init__(self, key):
        self.key = key
        self.left = None
        self.right = None

    def insert(self, key):
        cur = self
        while True:
            if key < cur.key:
                if cur.left is None:
                    cur.left = TreeNode(key)
                    return
                cur = cur.left
            else:
                if cur.right is None:
                    cur.right = TreeNode(key)
                    return
                cur = cur.right

    def contains(self, key):
        cur = self
        while cur is not None:
            if key == cur.key:
                return True
            cur = cur.left if key < cur.key else cur.right
        return False


tree_type.define(TreeNode.class_type.instance_type)

stack_node_type = deferred_type()


@jitclass([("data", int64), ("next", optional(stack_node_type))])
class StackNode:
    def __init__(self, data, next):
        self.data = data
        self.next = next


stack_node_type.define(StackNode.class_type.instance_type)


@jitclass([("head", optional(StackNode.class_type.instance_type)), ("size", int64)])
class Stack:
    """A stack built on linked nodes."""

    def __init__(self):
        self.head = None
        self.size = 0

    def push(self, data):
        self.head = StackNode(data, self.head)
        self.size += 1

    def pop(self):
        old = self.head
        if old is None:
            raise IndexError("pop from an empty stack")
        self.head = old.next
        self.size -= 1
        return old.data


@njit
def list_total(n):
    head = Node(0, None)
    for i in range(1, n):
        head = Node(i, head)
    return head.total()


@njit
def tree_found(n):
    root = TreeNode(n // 2)
    x = 12345
    for _ in range(n):
        x = (x * 1103515245 + 12345) % 2147483648
        root.insert(x % (4 * n))
    found = 0
    for key in range(4 * n):
        if root.contains(key):
            found += 1
    return found


@njit
def stack_sum(n):
    s = Stack()
    for i in range(n):
        s.push(i)
    total = 0
    while s.size > 0:
        total = total * 3 % 1000003 + s.pop()
    return total


PATTERNS = {"list": (list_total, Node), "tree": (tree_found, TreeNode), "stack": (stack_sum, Stack)}


if __name__ == "__main__":
    run = PATTERNS[sys.argv[1]][0]
    print("result", run(int(sys.argv[2])))
